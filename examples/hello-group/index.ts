import { Address, definePlugin, Type } from 'bruno/plugin'
import { greet } from './greet.ts'
import { deployGuestbook } from './guestbook.ts'
import { signGuestbook } from './signGuestbook.ts'

/** The options an operator gives in the config's `plugins` entry; checked (and defaulted) at start. */
const HelloOptions = Type.Object(
  {
    greeting: Type.String({ minLength: 1, maxLength: 40, default: 'Hello', description: 'how hello_greet opens' }),
    guestbook: { ...Address, description: 'the guestbook contract hello_sign_guestbook calls' },
  },
  { additionalProperties: false },
)

const instructions =
  'hello — an example group. hello_greet reads a configured token of a chain and greets it. ' +
  'hello_sign_guestbook encodes a guestbook signature: its `calls` run FROM the user\'s account (pass them to ' +
  'calibur_batch, or have the account\'s wallet send them), never from Bruno.'

/**
 * The `hello` group, as a third party would publish it: `definePlugin` from `bruno/plugin`, its
 * options validated by its own schema, its tools built from the services Bruno hands to `setup`.
 *
 * @example
 * // bruno.json
 * { "groups": ["erc20", "hello"], "plugins": [{ "from": "bruno-hello-group", "options": { "guestbook": "0x…" } }], … }
 */
export default definePlugin({
  name: 'hello',
  order: 60,
  options: HelloOptions,
  setup: (services, options) => ({
    instructions,
    tools: [greet(services, options.greeting), signGuestbook(services.chainArgument, options.guestbook)],
  }),
  // `npm start -- --plugin ./examples/hello-group`: a guestbook of its own on the devnet.
  devnet: async (deployment) => ({ greeting: 'Hello', ...(await deployGuestbook(deployment)) }),
})
