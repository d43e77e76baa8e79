import { concat, getAddress, keccak256, toHex, type Address } from 'viem'
import { caliburAbi } from './abi.ts'
import { CheckFailed, notAnswered, type Network } from '../../core/plugin.ts'

/**
 * The account preflight asks "what does a delegated account report?": an `eth_call` gives it the
 * code `0xef0100 ‖ calibur` (an EIP-7702 delegation) by a state override, so nothing is signed or
 * sent. Any address with no code and no storage would do; this one is the low 20 bytes of
 * keccak256("bruno preflight: calibur delegation probe").
 */
const DELEGATION_PROBE: Address = getAddress(`0x${keccak256(toHex('bruno preflight: calibur delegation probe')).slice(-40)}`)

/**
 * The calibur group's preflight check: Calibur at its address on the chain (the group's option), recognised by
 * what it does rather than by its bytes (the real contract and the devnet's stand-in differ in code
 * and agree in behaviour): its ERC-5267 `eip712Domain()` answers name `Calibur`, version `1.0.0`;
 * and an account delegated to it reports the domain Bruno has wallets sign — fields 0x1f, name and
 * version as above, this chain's id, the account itself as verifyingContract, a salt whose low 160
 * bits are Calibur's address (prefix 0 on a fresh account) — and nonce sequence 0 for key 0.
 *
 * @example
 * await checkCalibur(networks.get('base'), {}, { address: CALIBUR_ADDRESS }) // 'Calibur 1.0.0 at 0x0000…030e; a delegated account reports …'
 */
export async function checkCalibur(network: Network, _options: unknown, { address }: { readonly address: string }): Promise<string> {
  const { client } = network
  const { chainId } = network.config
  const calibur = getAddress(address)
  const code = await client.getCode({ address: calibur })
  if (!code || code === '0x') throw new CheckFailed(`no code at ${calibur}`)
  const own = await client.readContract({ address: calibur, abi: caliburAbi, functionName: 'eip712Domain' }).catch(notAnswered)
  if (!own) throw new CheckFailed(`${calibur} does not answer ERC-5267 eip712Domain(): it is not Calibur`)
  const [, name, version] = own
  if (name !== 'Calibur' || version !== '1.0.0') throw new CheckFailed(`${calibur}'s eip712Domain() is "${name}" version "${version}", not Calibur 1.0.0`)

  const stateOverride = [{ address: DELEGATION_PROBE, code: concat(['0xef0100', calibur]) }]
  const delegated = { address: DELEGATION_PROBE, abi: caliburAbi, stateOverride }
  const reported = await client.readContract({ ...delegated, functionName: 'eip712Domain' }).catch(notAnswered)
  if (!reported) throw new CheckFailed(`an account delegated to ${calibur} does not answer eip712Domain() (the RPC must run an eth_call with a state override on an EIP-7702 chain)`)
  const [fields, delegatedName, delegatedVersion, domainChainId, verifyingContract, salt] = reported
  const wrong: string[] = []
  if (fields !== '0x1f') wrong.push(`fields ${fields}, not 0x1f`)
  if (delegatedName !== 'Calibur' || delegatedVersion !== '1.0.0') wrong.push(`"${delegatedName}" version "${delegatedVersion}", not Calibur 1.0.0`)
  if (domainChainId !== BigInt(chainId)) wrong.push(`chain id ${domainChainId}, not ${chainId}`)
  if (getAddress(verifyingContract) !== DELEGATION_PROBE) wrong.push(`verifyingContract ${getAddress(verifyingContract)}, not the account itself`)
  if (BigInt(salt) !== BigInt(calibur)) wrong.push(`salt ${salt}, not Calibur's address`)
  if (wrong.length > 0) throw new CheckFailed(`an account delegated to ${calibur} reports an EIP-712 domain that is not Calibur's: ${wrong.join('; ')}`)
  const seq = await client.readContract({ ...delegated, functionName: 'getSeq', args: [0n] }).catch(notAnswered)
  if (seq !== 0n) throw new CheckFailed(`an account delegated to ${calibur} ${seq === undefined ? 'does not answer getSeq(0)' : `reports nonce sequence ${seq} for a fresh account, not 0`}`)
  return `Calibur 1.0.0 at ${calibur}; a delegated account reports its own EIP-712 domain (chain id ${chainId}, salt Calibur's address) and nonce sequence 0`
}
