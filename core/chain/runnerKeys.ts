import { isHex, type LocalAccount } from 'viem'
import { mnemonicToAccount, privateKeyToAccount } from 'viem/accounts'
import type { NetworkConfig } from '../../config/schema.ts'

/**
 * A chain's runner keys, one lane each: `runner.key` first (the Runner's `operator`), then
 * `runner.lanes` — keys from environment variables, or a BIP-39 mnemonic's accounts
 * m/44'/60'/0'/0/1 to /count (index 0 is left to `runner.key`, should it come from the same
 * mnemonic). Throws naming the variable that is missing or malformed, never its value.
 *
 * @example
 * runnerKeys(network, process.env).map((account) => account.address) // ['0x15d3…', '0x9965…', …]
 */
export function runnerKeys(network: Pick<NetworkConfig, 'name' | 'runner'>, env: NodeJS.ProcessEnv): LocalAccount[] {
  const fromKey = (name: string, where: string) => keyAccount(network, env, name, where)
  const first = fromKey(network.runner.key.env, 'runner.key')
  const lanes = network.runner.lanes
  if (lanes === undefined) return [first]
  if (Array.isArray(lanes)) return [first, ...lanes.map(({ env: name }, index) => fromKey(name, `runner.lanes[${index}]`))]
  const phrase = env[lanes.mnemonic.env]?.trim()
  if (!phrase || phrase.split(/\s+/).length < 12) throw new Error(`networks.${network.name}.runner.lanes.mnemonic: environment variable ${lanes.mnemonic.env} must hold a BIP-39 mnemonic (12 or more words)`)
  return [first, ...Array.from({ length: lanes.count }, (_, index) => mnemonicToAccount(phrase, { addressIndex: index + 1 }))]
}

/**
 * The key of `runner.treasury`, which tops the lanes up, if the chain has one; its balances must
 * leave room to top up (`targetWei` above `floorWei`). Throws naming what is wrong, never a value.
 *
 * @example
 * treasuryKey(network, process.env)?.address // '0x9965…'
 */
export function treasuryKey(network: Pick<NetworkConfig, 'name' | 'runner'>, env: NodeJS.ProcessEnv): LocalAccount | undefined {
  const treasury = network.runner.treasury
  if (treasury === undefined) return undefined
  if (BigInt(treasury.targetWei) <= BigInt(treasury.floorWei)) throw new Error(`networks.${network.name}.runner.treasury: targetWei must be above floorWei`)
  return keyAccount(network, env, treasury.key.env, 'runner.treasury.key')
}

/** The account of the private key in `env[name]`; a missing or malformed one is named (`where` in the config), never quoted. */
function keyAccount(network: Pick<NetworkConfig, 'name'>, env: NodeJS.ProcessEnv, name: string, where: string): LocalAccount {
  const key = env[name]
  if (!key || !isHex(key) || key.length !== 66) throw new Error(`networks.${network.name}.${where}: environment variable ${name} must hold a 32-byte hex private key`)
  return privateKeyToAccount(key)
}

/**
 * The secrets behind a chain's further lanes and its treasury, for the logger to scrub: each key's hex digits, or the mnemonic phrase.
 *
 * @example
 * laneSecrets(network, process.env) // ['ac09…', …] or ['test test … junk']
 */
export function laneSecrets(network: Pick<NetworkConfig, 'runner'>, env: NodeJS.ProcessEnv): string[] {
  const keyHex = (name: string) => (env[name] ? [env[name]!.replace(/^0x/i, '')] : [])
  const treasury = network.runner.treasury ? keyHex(network.runner.treasury.key.env) : []
  const lanes = network.runner.lanes
  if (lanes === undefined) return treasury
  if (Array.isArray(lanes)) return [...lanes.flatMap(({ env: name }) => keyHex(name)), ...treasury]
  const phrase = env[lanes.mnemonic.env]?.trim()
  return [...(phrase ? [phrase] : []), ...treasury]
}
