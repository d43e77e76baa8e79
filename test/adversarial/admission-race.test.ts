import t, { type Test } from 'tap'
import { startDevnetBruno } from '../fixtures/devnetBruno.ts'
import { RawMcpClient } from '../fixtures/mcpHttp.ts'
import { waitFor } from '../fixtures/waitFor.ts'
import { adversaryChain, bindings, ledgerEntry, ledgerLine, quotedPayer, transferPayment, type Binding, type Submitted } from './adversary.ts'

// Issue 27, point 6: admission read a payer's and a client's standing before the ~100 ms simulation, and the insert
// did not count again, so concurrent submits all passed one count: 30 of 40 by one payer were accepted (cap 8), 76
// of 120 from one client (cap 64). The store now counts and inserts in one transaction (SubmissionStore.insert's
// caps). Here the attack runs end to end, through all three bindings at once, with the chain holding its blocks so
// that no accepted submission settles and frees a place during the burst.

const CLIENT_CAP = 16
const bruno = await startDevnetBruno(t, {
  groups: ['bruno'],
  pollMs: 100,
  configure: (config) => {
    const [network] = config.networks
    // Simulations at once are not bounded here (relay.admission.simulations): the race is between stored submissions.
    const admission = { ...network!.relay.admission, client: { ...network!.relay.admission.client, maxActive: CLIENT_CAP }, simulations: { ...network!.relay.admission.simulations, atOnce: 100 } }
    return { ...config, networks: [{ ...network!, relay: { ...network!.relay, admission } }] }
  },
})
const chain = adversaryChain(bruno)
const mcp = new RawMcpClient(`${bruno.mcpUrl}/bruno`)
const api = bindings(bruno, mcp)
const ACCOUNT_CAP = bruno.config.networks[0]!.relay.admission.account.maxActive
const BINDINGS: readonly Binding[] = ['mcp', 'rest', 'rpc']

const payer = () => quotedPayer(bruno, chain, mcp)

/** Every submission of the burst, signed first, then sent at once, round robin over the bindings. */
async function burst(submissions: readonly { key: `0x${string}`; call: unknown; amount: bigint }[]): Promise<{ binding: Binding; value: Submitted }[]> {
  const requests = await Promise.all(submissions.map(async (one) => ({ call: one.call, payment: await transferPayment(bruno, one.key, one.amount) })))
  return Promise.all(requests.map(async (request, index) => {
    const binding = BINDINGS[index % BINDINGS.length]!
    return { binding, value: await api.submit(binding, request) }
  }))
}

/** Mines until every accepted submission is settled; each must be done, its runner transaction paid in full. */
async function settleAll(t: Test, accepted: { binding: Binding; id: string }[]) {
  await chain.testClient.setAutomine(true)
  // One transaction in flight per payer, each followed to its confirmations: blocks on demand until all settled.
  let settling = true
  const mining = (async () => {
    while (settling) {
      await chain.testClient.mine({ blocks: 1 })
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
  })()
  t.teardown(async () => {
    settling = false
    await mining
  })
  // A payer's submissions go one after another, each held (with its backoff) behind the one in flight.
  const views = await Promise.all(accepted.map(({ binding, id }) => waitFor(() => api.status(binding, id), (view) => view.stage === 'done' || view.stage === 'failed', `${id} settled`, 120_000, 100)))
  for (const [index, { binding, id }] of accepted.entries()) {
    const view = views[index]
    t.equal(view.stage, 'done', `${id} done (${view.reason ?? ''})`)
    const entry = await ledgerEntry(bruno, view.transaction.hash)
    t.ok(entry.spentWei <= entry.keptWei, `${id}: the runner spent ${entry.spentWei} wei, was paid ${entry.keptWei}`)
    ledgerLine(t, `${binding} ${id}`, entry)
  }
}

t.test(`40 concurrent submits by one payer: exactly ${ACCOUNT_CAP} accepted, the rest refused as busy`, async (t) => {
  const one = await payer()
  await chain.testClient.setAutomine(false)
  t.teardown(() => chain.testClient.setAutomine(true))
  const answers = await burst(Array.from({ length: 40 }, () => one))
  const accepted = answers.flatMap(({ binding, value }) => (value.accepted ? [{ binding, id: value.id }] : []))
  const refused = answers.flatMap(({ value }) => (value.accepted ? [] : [value.message]))
  t.equal(accepted.length, ACCOUNT_CAP, `accepted ${accepted.length} of 40`)
  t.equal(refused.length, 40 - ACCOUNT_CAP)
  const busy = `refused: the account ${one.address} has ${ACCOUNT_CAP} active submissions, the most it may have: wait for one to be done or failed`
  t.same([...new Set(refused)], [busy], 'each refusal names the cap, whether admission or the store found it reached')
  await settleAll(t, accepted)
})

t.test(`${CLIENT_CAP * 3} concurrent submits from one client over 6 payers: exactly ${CLIENT_CAP} accepted`, async (t) => {
  const payers = []
  for (let index = 0; index < 6; index++) payers.push(await payer())
  await chain.testClient.setAutomine(false)
  t.teardown(() => chain.testClient.setAutomine(true))
  // 8 each: no payer's own cap is passed, the client's is.
  const answers = await burst(payers.flatMap((one) => Array.from({ length: CLIENT_CAP * 3 / payers.length }, () => one)))
  const accepted = answers.flatMap(({ binding, value }) => (value.accepted ? [{ binding, id: value.id }] : []))
  const refused = answers.flatMap(({ value }) => (value.accepted ? [] : [value.message]))
  t.equal(accepted.length, CLIENT_CAP, `accepted ${accepted.length} of ${answers.length}: ${[...new Set(refused)].join(' | ')}`)
  for (const message of new Set(refused)) {
    t.match(message, new RegExp(`^refused: the client \\S+ has ${CLIENT_CAP} active submissions, the most it may have: wait for one to be done or failed$`))
  }
  await settleAll(t, accepted)
})
