// SPDX-License-Identifier: UNLICENSED
pragma solidity 0.8.37;

/// Test-only contracts for test/adversarial: calls that behave one way when simulated and another when
/// mined, state a payer can change in the same block, and delegates an account can switch to.

interface IERC20Like {
    function transferFrom(address from, address to, uint256 amount) external returns (bool);
}

/// @notice Heavy work that succeeds (a fixed number of keccak rounds: the same gas whatever the stipend), and
/// a burn that takes all the gas a frame was given (INVALID).
abstract contract Work {
    event Worked(bytes32 digest, uint256 rounds);

    function _work(uint256 rounds) internal {
        bytes32 digest;
        // In the scratch space: the same gas every round (abi.encode would grow memory, round after round).
        assembly ("memory-safe") {
            for { let i := 0 } lt(i, rounds) { i := add(i, 1) } {
                mstore(0x00, digest)
                mstore(0x20, i)
                digest := keccak256(0x00, 0x40)
            }
        }
        emit Worked(digest, rounds);
    }

    function _burnAll() internal pure {
        assembly ("memory-safe") {
            invalid()
        }
    }
}

/// @notice Calls that succeed with heavy work in one environment and burn every unit of gas they are given in
/// another: by what the block or the transaction says when the call runs.
contract Divergent is Work {
    /// Burns when the transaction pays a gas price (a simulation without fee fields sees GASPRICE 0).
    function onGasPrice(uint256 rounds) external {
        if (tx.gasprice > 0) _burnAll();
        _work(rounds);
    }

    /// Burns in any block after `last` (a simulation at latest runs in block `last`).
    function afterBlock(uint256 last, uint256 rounds) external {
        if (block.number > last) _burnAll();
        _work(rounds);
    }

    /// Burns in any block later than `last` seconds.
    function afterTime(uint256 last, uint256 rounds) external {
        if (block.timestamp > last) _burnAll();
        _work(rounds);
    }

    /// Burns unless the block is built by `expected` (the next block's builder is seldom the latest's).
    function unlessCoinbase(address expected, uint256 rounds) external {
        if (block.coinbase != expected) _burnAll();
        _work(rounds);
    }

    /// Burns unless the block's base fee is `expected` (the next block's base fee moves with the latest's use).
    function unlessBaseFee(uint256 expected, uint256 rounds) external {
        if (block.basefee != expected) _burnAll();
        _work(rounds);
    }

    /// Burns when given less than `threshold` gas: cheap with a generous probe stipend, all-consuming with the
    /// stipend sized from that probe.
    function whenGasPlenty(uint256 threshold, uint256 rounds) external {
        if (gasleft() < threshold) _burnAll();
        _work(rounds);
    }
}

/// @notice State a call depends on and its owner can change at any time: a flag, and an allowance to pull.
contract StateTarget is Work {
    mapping(address owner => bool) public open;

    function setOpen(bool value) external {
        open[msg.sender] = value;
    }

    /// Heavy work, only while `owner` keeps its flag up.
    function workIfOpen(address owner, uint256 rounds) external {
        require(open[owner], "closed by its owner");
        _work(rounds);
    }

    /// Pulls `amount` of `token` from `from` (its allowance to this contract), then heavy work.
    function pullAndWork(address token, address from, uint256 amount, uint256 rounds) external {
        require(IERC20Like(token).transferFrom(from, address(this), amount), "pull failed");
        _work(rounds);
    }
}

/// @notice A delegate (or a contract) whose every entry point burns all the gas it is given: an ERC-1271
/// `isValidSignature`, Calibur's `execute`, anything.
contract GasSink {
    fallback() external payable {
        assembly ("memory-safe") {
            invalid()
        }
    }
}

/// @notice A delegate with no code path at all: every call to it reverts at once (no fallback).
contract Inert {}

/// @notice An EIP-7702 delegate for an EOA that pays with a signed EIP-3009 transfer: USDC (FiatToken v2.2)
/// checks the signature of an account with code by ERC-1271. It accepts any signature up to block
/// `lastGood` (set on this implementation) and burns all its gas after it.
contract FickleSigner {
    bytes4 private constant MAGIC = 0x1626ba7e;
    FickleSigner private immutable SELF;
    uint256 public lastGood;

    constructor() {
        SELF = this;
    }

    function setLastGood(uint256 blockNumber) external {
        lastGood = blockNumber;
    }

    function isValidSignature(bytes32, bytes calldata) external view returns (bytes4) {
        if (block.number > SELF.lastGood()) {
            assembly ("memory-safe") {
                invalid()
            }
        }
        return MAGIC;
    }
}

/// @notice An armed switch (issue 27): heavy work while disarmed, which is what Bruno simulates; once armed for an
/// account (one cheap transaction ahead of the runner's), the account's call burns all its gas, or reverts with
/// revert data whose memory costs `bombPercent` % of the gas it has left. Reverting returns the gas the data did not
/// cost, so every frame above that copies the data back pays for it again: sized near a sixth of the stipend,
/// three copies (the call's, a wrapping frame's copy and re-encoding, its caller's copy) cost more than the whole.
contract Switch is Work {
    uint256 public constant DISARMED = 0;
    uint256 public constant RETURN_DATA_BOMB = 1;
    uint256 public constant GAS_BOMB = 2;

    mapping(address => uint256) public mode;
    mapping(address => uint256) public bombPercent;

    function arm(address account, uint256 newMode, uint256 percent) external {
        mode[account] = newMode;
        bombPercent[account] = percent;
    }

    function run(uint256 rounds) external {
        uint256 armed = mode[msg.sender];
        if (armed == DISARMED) {
            _work(rounds);
            return;
        }
        if (armed == GAS_BOMB) _burnAll();
        // Memory for w words costs 3w + w²/512: w = 256·(√(9 + g/128) − 3) words cost exactly g.
        uint256 budget = (gasleft() - 2_000) * bombPercent[msg.sender] / 100;
        uint256 words = 256 * (_sqrt(9 + budget / 128) - 3);
        assembly {
            revert(0, mul(words, 32))
        }
    }

    function _sqrt(uint256 x) private pure returns (uint256 y) {
        y = x;
        uint256 z = (x + 1) / 2;
        while (z < y) {
            y = z;
            z = (x / z + z) / 2;
        }
    }
}
