import type { TSchema } from '@sinclair/typebox'
import type { Network, Networks } from './chain/networks.ts'
import { gasPricer, type GasPricer, type PaymentToken } from './charge/gasPricer.ts'
import { paymentToken } from './relay/paymentToken.ts'
import type { RelayService } from './relayService.ts'

/** The configured networks, by the names the `chain` argument takes. */
export interface NetworkDirectory {
  readonly names: readonly string[]
  /** The network named `name` (its config and a viem public client); throws for a name the config lacks. */
  get(name: string): Network
}

/** The relay's operations, as the `bruno` group's tools and the REST binding use them. */
export type RelayOperations = Pick<RelayService, 'account' | 'delegates' | 'requireTransferPayer' | 'quote' | 'submit' | 'status'>

/** How a group sizes a payment to Bruno it builds itself (a delegate batch's payment leg). */
export interface PaymentServices {
  /** A token the relay accepts as payment on `chain`, or a `ToolError` naming the accepted ones. */
  token(chain: string, token: string): PaymentToken
  /** A pricer for gas in `token` on `chain`, at current fees and the pool's price, margin included. */
  pricer(chain: string, token: string): Promise<GasPricer>
  /** Whether the payee on `chain` sends back what a relay did not cost: else it keeps the whole payment. */
  refunds(chain: string): Promise<boolean>
}

/**
 * What core offers a group, and all it offers: the networks (config and viem client), the `chain`
 * argument schema, the relay's operations and payment sizing. A group's `setup` receives it, and
 * so does every tool handler.
 *
 * @example
 * const { client, config } = services.networks.get('base')
 * const pricer = await services.payment.pricer('base', 'USDC')
 * pricer.amountFor(150_000n) // USDC base units for 150k gas
 */
export interface BrunoServices {
  /** The `chain` argument schema: an enum of the configured networks' names. */
  readonly chainArgument: TSchema
  readonly networks: NetworkDirectory
  readonly relay: RelayOperations
  readonly payment: PaymentServices
}

/**
 * Builds the services handed to groups. Only the relay's operations are exposed, never its
 * runners or store, so a group cannot start, stop or bypass the relay.
 */
export function createServices(networks: Networks, relay: RelayService, chainArgument: TSchema): BrunoServices {
  const token = (chain: string, name: string) => paymentToken(networks.get(chain), name)
  return {
    chainArgument,
    networks: { names: networks.names, get: (name) => networks.get(name) },
    relay: {
      account: (chain, address) => relay.account(chain, address),
      delegates: (chain) => relay.delegates(chain),
      requireTransferPayer: (chain, payer) => relay.requireTransferPayer(chain, payer),
      quote: (chain, request, client) => relay.quote(chain, request, client),
      submit: (chain, request, client) => relay.submit(chain, request, client),
      status: (id) => relay.status(id),
    },
    payment: {
      token,
      pricer: (chain, name) => gasPricer(networks.get(chain), token(chain, name)),
      refunds: (chain) => relay.payeeRefunds(chain),
    },
  }
}
