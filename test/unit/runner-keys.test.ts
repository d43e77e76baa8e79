import t from 'tap'
import { getAddress } from 'viem'
import { mnemonicToAccount, privateKeyToAccount } from 'viem/accounts'
import { laneSecrets, runnerKeys } from '../../core/chain/runnerKeys.ts'

// runner.key and runner.lanes (issue 33): the chain's keys in lane order, from variables or one mnemonic, and the
// secrets the logger scrubs; a missing or malformed variable is named, never quoted.

const FIRST = '0x47e179ec197488593b187f80a00eb0da91f1b9d0b13f8733639f19c30a34926a'
const SECOND = '0x8b3a350cf5c34c9194ca85829a2df0ec3153be0318b5e2d3348e872092edffba'
const MNEMONIC = 'test test test test test test test test test test test junk'
const network = (lanes?: unknown) => ({ name: 'base', runner: { key: { env: 'RUNNER' }, ...(lanes ? { lanes } : {}) } }) as never

t.test('one lane by default; listed keys after runner.key, in order', async (t) => {
  t.same(runnerKeys(network(), { RUNNER: FIRST }).map((account) => account.address), [privateKeyToAccount(FIRST).address])
  const listed = runnerKeys(network([{ env: 'LANE_A' }]), { RUNNER: FIRST, LANE_A: SECOND })
  t.same(listed.map((account) => account.address), [privateKeyToAccount(FIRST).address, privateKeyToAccount(SECOND).address])
  t.same(laneSecrets(network([{ env: 'LANE_A' }]), { LANE_A: SECOND }), [SECOND.slice(2)], 'the key\'s hex, without 0x')
  t.same(laneSecrets(network(), {}), [])
})

t.test('a mnemonic and a count: its accounts /1 to /count, index 0 left to runner.key', async (t) => {
  const keys = runnerKeys(network({ mnemonic: { env: 'LANES' }, count: 3 }), { RUNNER: FIRST, LANES: `  ${MNEMONIC}\n` })
  t.same(
    keys.slice(1).map((account) => account.address),
    [1, 2, 3].map((addressIndex) => mnemonicToAccount(MNEMONIC, { addressIndex }).address),
  )
  t.equal(getAddress(keys[2]!.address), '0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC', "anvil's #2: m/44'/60'/0'/0/2")
  t.same(laneSecrets(network({ mnemonic: { env: 'LANES' }, count: 3 }), { LANES: MNEMONIC }), [MNEMONIC], 'the phrase')
})

/** What `run` threw, in words. */
function thrown(run: () => unknown): string {
  try {
    run()
  } catch (error) {
    return (error as Error).message
  }
  throw new Error('it did not throw')
}

t.test('a missing or malformed variable is named, its value never shown', async (t) => {
  t.equal(thrown(() => runnerKeys(network(), {})), 'networks.base.runner.key: environment variable RUNNER must hold a 32-byte hex private key')
  t.equal(thrown(() => runnerKeys(network([{ env: 'LANE_A' }]), { RUNNER: FIRST, LANE_A: '0x1234' })), 'networks.base.runner.lanes[0]: environment variable LANE_A must hold a 32-byte hex private key')
  const short = 'only three words'
  const words = thrown(() => runnerKeys(network({ mnemonic: { env: 'LANES' }, count: 2 }), { RUNNER: FIRST, LANES: short }))
  t.equal(words, 'networks.base.runner.lanes.mnemonic: environment variable LANES must hold a BIP-39 mnemonic (12 or more words)')
  t.notMatch(words, short)
})
