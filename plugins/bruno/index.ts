import type { FastifyPluginAsync } from 'fastify'
import { account } from './account.ts'
import { quote } from './quote.ts'
import { status } from './status.ts'
import { submit } from './submit.ts'

const instructions =
  'bruno — the relay. `account` says whether an account is delegated to Calibur and what it holds. `quote` prices a ' +
  'call in a token. `submit` hands a paid call to the runner and answers at once with an id; `status` follows it ' +
  'to done. Bruno never holds a key: your wallet signs what the other groups prepare, and the payment is made inside ' +
  'the same transaction as the call.'

/** The `bruno` group: account, quote, submit, status. */
export const brunoGroup: FastifyPluginAsync = async (app) => {
  const { registry, chainArgument } = app.bruno
  registry.addGroup({ name: 'bruno', order: 10, instructions, tools: [account(chainArgument), quote(chainArgument), submit(chainArgument), status] })
}
