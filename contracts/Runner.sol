// SPDX-License-Identifier: UNLICENSED
pragma solidity 0.8.37;

/// @notice The two token functions the Runner calls: ERC-20's balance and EIP-3009's (v, r, s) transfer.
interface IPaymentToken {
    function balanceOf(address account) external view returns (uint256);

    function transferWithAuthorization(
        address from,
        address to,
        uint256 value,
        uint256 validAfter,
        uint256 validBefore,
        bytes32 nonce,
        uint8 v,
        bytes32 r,
        bytes32 s
    ) external;
}

/// @title Runner
/// @notice Bruno's runner sends every relayed call through this contract, which makes the call and then
/// reverts unless the payee's token balance rose by the agreed amount. A transaction that does not pay
/// therefore cannot succeed, and the runner never pays gas for a call it was not paid for.
/// @dev Why arbitrary calls are safe here: the contract is nonpayable and holds nothing (no ETH, no
/// tokens, no allowances, no roles anywhere), so a call made as `msg.sender == Runner` can take nothing;
/// tokens sent here by mistake are not guarded and should be treated as lost. Only the operator may call,
/// so a target reentering `relay` fails `NotOperator`; and each call measures its own balance delta, so a
/// reentry could not make one payment count twice anyway.
contract Runner {
    /// @notice A signed EIP-3009 `transferWithAuthorization` whose `to` is the payee.
    struct Authorization {
        address from;
        uint256 value;
        uint256 validAfter;
        uint256 validBefore;
        bytes32 nonce;
        uint8 v;
        bytes32 r;
        bytes32 s;
    }

    /// @notice The runner EOA, the only caller.
    address public immutable operator;

    /// @notice A relay paid: `received` is the payee's balance rise, at least the amount required.
    event Relayed(address indexed target, address indexed payee, uint256 received);

    error NotOperator();
    /// @notice The relayed call reverted; `reason` is its revert data, unchanged.
    error CallReverted(bytes reason);
    error PaymentShort(uint256 received, uint256 required);

    constructor(address operator_) {
        operator = operator_;
    }

    /// @notice Calls `target` with `data` (value 0), then requires `payee`'s `token` balance to have risen
    /// by at least `amount`: the call pays for itself, e.g. a Calibur batch with a transfer to the payee.
    /// @param target the contract to call; address(0) makes no call, leaving only the payment check.
    /// @return received how much the payee's balance rose.
    function relay(address target, bytes calldata data, address token, address payee, uint256 amount)
        external
        returns (uint256 received)
    {
        if (msg.sender != operator) revert NotOperator();
        uint256 balanceBefore = IPaymentToken(token).balanceOf(payee);
        return _callAndSettle(target, data, token, payee, amount, balanceBefore);
    }

    /// @notice Makes the signed EIP-3009 transfer of `token` from `authorization.from` to `payee`, then does
    /// what `relay` does. The balance is read before the transfer, so the transfer counts toward `amount`.
    /// A refused authorization reverts with the token's own reason.
    /// @param target the contract to call; address(0) makes no call (the transfer alone is the payment).
    /// @return received how much the payee's balance rose, the transfer included.
    function relayWithAuthorization(
        address target,
        bytes calldata data,
        address token,
        address payee,
        uint256 amount,
        Authorization calldata authorization
    ) external returns (uint256 received) {
        if (msg.sender != operator) revert NotOperator();
        uint256 balanceBefore = IPaymentToken(token).balanceOf(payee);
        IPaymentToken(token).transferWithAuthorization(
            authorization.from,
            payee,
            authorization.value,
            authorization.validAfter,
            authorization.validBefore,
            authorization.nonce,
            authorization.v,
            authorization.r,
            authorization.s
        );
        return _callAndSettle(target, data, token, payee, amount, balanceBefore);
    }

    function _callAndSettle(
        address target,
        bytes calldata data,
        address token,
        address payee,
        uint256 amount,
        uint256 balanceBefore
    ) private returns (uint256 received) {
        if (target != address(0)) {
            (bool success, bytes memory reason) = target.call(data);
            if (!success) revert CallReverted(reason);
        }
        uint256 balanceAfter = IPaymentToken(token).balanceOf(payee);
        // The call may also move the payee's tokens out (the payee's own allowances): a fall is no payment.
        received = balanceAfter > balanceBefore ? balanceAfter - balanceBefore : 0;
        if (received < amount) revert PaymentShort(received, amount);
        emit Relayed(target, payee, received);
    }
}
