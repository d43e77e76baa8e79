import { Calls, defineTool, Type, type TSchema } from 'bruno/plugin'
import { encodeFunctionData, getAddress } from 'viem'

const guestbookAbi = [
  { type: 'function', name: 'sign', stateMutability: 'nonpayable', inputs: [{ name: 'message', type: 'string' }], outputs: [] },
] as const

/**
 * `hello_sign_guestbook`: an encoder. Like every Bruno helper it sends nothing and returns
 * `calls: [{to, value, data}]` for the account to make, the shape `calibur_batch` takes.
 *
 * @example
 * await client.callTool({ name: 'hello_sign_guestbook', arguments: { chain: 'base', message: 'gm' } })
 * // structuredContent: { calls: [{ to: guestbook, value: '0', data: '0x79d6348d…' }] }
 */
export const signGuestbook = (chain: TSchema, guestbook: string) =>
  defineTool({
    name: 'hello_sign_guestbook',
    title: 'Sign the guestbook',
    description: 'Encodes guestbook.sign(message) for the account to call (from its wallet, or inside calibur_batch). Sends nothing.',
    input: Type.Object(
      { chain, message: Type.String({ minLength: 1, maxLength: 140, description: 'what to write in the guestbook' }) },
      { additionalProperties: false },
    ),
    output: Type.Object({ calls: Calls }, { additionalProperties: false }),
    annotations: { readOnlyHint: true, openWorldHint: false },
    handler: async (args) => ({
      calls: [{ to: getAddress(guestbook), value: '0', data: encodeFunctionData({ abi: guestbookAbi, functionName: 'sign', args: [args.message] }) }],
    }),
  })
