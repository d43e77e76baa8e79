// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

/// @notice The hello group's guestbook: anyone signs it; each signature is an event.
contract Guestbook {
    event Signed(address indexed by, string message);

    function sign(string calldata message) external {
        emit Signed(msg.sender, message);
    }
}
