// SPDX-License-Identifier: UNLICENSED
pragma solidity 0.8.37;

/// @notice What the vault asks of the Runner: whether it is making a refund now.
interface IRunnerSettling {
    function settling() external view returns (bool);
}

/// @title PayeeVault
/// @notice A payee that can send back the unused part of a payment, in the transaction that paid it. Configured as a
/// network's `payee`, it receives every payment; during the Runner's settlement, and only then, the Runner may have
/// it refund a payer (`refund`). Its owner — the operator's treasury, never the Runner — withdraws what it earned.
/// @dev Why a relayed call cannot take from it: the Runner's call phase runs as the Runner, so `msg.sender == runner`
/// alone would let any relayed call ask for a refund. The Runner raises its `settling` flag (transient storage) only
/// around its own refund call, after the call phase has returned, and no relayed code runs while it is up. The vault
/// grants no allowance and holds no role anywhere.
contract PayeeVault {
    /// @notice The Runner whose settlements may refund.
    address public immutable runner;
    /// @notice Who may withdraw.
    address public immutable owner;

    error NotSettling();
    error NotOwner();
    /// @notice The token refused the transfer (it reverted or answered false).
    error TransferFailed(address token);

    event Withdrawn(address indexed token, address indexed to, uint256 amount);

    constructor(address runner_, address owner_) {
        runner = runner_;
        owner = owner_;
    }

    /// @notice Sends `amount` of `token` to `to`: a payer's refund, asked by the Runner while it settles.
    /// @return its own selector, which the Runner takes as the refund made.
    function refund(address token, address to, uint256 amount) external returns (bytes4) {
        if (msg.sender != runner || !IRunnerSettling(runner).settling()) revert NotSettling();
        _transfer(token, to, amount);
        return PayeeVault.refund.selector;
    }

    /// @notice Sends what the vault earned on. Owner only.
    function withdraw(address token, address to, uint256 amount) external {
        if (msg.sender != owner) revert NotOwner();
        _transfer(token, to, amount);
        emit Withdrawn(token, to, amount);
    }

    // ERC-20 transfer; a token that answers nothing is taken at its word, as older ERC-20s are.
    function _transfer(address token, address to, uint256 amount) private {
        (bool ok, bytes memory answer) = token.call(abi.encodeWithSelector(0xa9059cbb, to, amount));
        if (!ok || (answer.length != 0 && (answer.length != 32 || abi.decode(answer, (uint256)) != 1))) revert TransferFailed(token);
    }
}
