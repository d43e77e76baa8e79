import { ToolError } from '../tool/tool.ts'
import type { RelayContext } from './context.ts'
import type { ActiveCapReached, ActiveCaps, PartyStanding } from '../store/store.ts'

type PartyLimits = { readonly maxActive: number; readonly throttleAfter: number; readonly banAfter: number }

/** Why a submission (or a quote, for the last two) was refused before it was simulated: the `/metrics` label. */
export type AdmissionRefusal = 'account_banned' | 'client_banned' | 'account_busy' | 'client_busy' | 'client_simulating' | 'client_refused_gas'

/** What admission let through: the caps the store checks again as it stores, and the words of their refusal. */
export interface Admitted {
  /** The most active submissions the payer and the client may have (fewer while throttled). */
  readonly caps: ActiveCaps
  /** The refusal for a cap the store found reached as it stored: a concurrent submit took the last place. */
  busy(reached: ActiveCapReached): ToolError
}

/**
 * Admission by standing, ERC-7562 style, for a payer and a client (`relay.admission.account`,
 * `.client`): each may have a capped number of active submissions; one whose accepted submissions
 * failed by its own doing (`fault`) `throttleAfter` times within the window may have only one, and
 * `banAfter` times is refused until `banSec` after its latest such failure. A paying account is
 * refused at once when a payment of its reverted on chain (the runner paid for that: DESIGN §3's
 * one bounded loss). A refusal says why and until when, and is counted (`context.refused`).
 *
 * This is read before the submission is simulated, so that a refused one costs no simulation; the
 * caps it returns are checked again by the store in the transaction that stores it
 * (`SubmissionStore.insert`), since concurrent submits all read the standing before any is stored.
 *
 * @example
 * const { caps, busy } = await admit(context, '0x7099…79C8', '203.0.113.7') // throws ToolError when refused
 */
export async function admit(context: RelayContext, payer: string, client: string | undefined): Promise<Admitted> {
  const { admission } = context.network.config.relay
  const now = Date.now()
  const standing = await context.store.standing(payer, client, now - admission.windowSec * 1000)
  const judge = (party: PartyStanding, who: string, limits: PartyLimits, banOnRevert: boolean, banned: AdmissionRefusal, busy: AdmissionRefusal) => {
    const until = (party.lastFaultAt ?? 0) + admission.banSec * 1000
    const revertBan = banOnRevert && party.reverts > 0
    if ((party.faults >= limits.banAfter || revertBan) && until > now) {
      context.refused?.(banned)
      throw new ToolError(
        `refused: ${who} is refused until ${new Date(until).toISOString()}: ` +
          (revertBan
            ? `${party.reverts === 1 ? 'a payment of its' : `${party.reverts} payments of its`} reverted on chain after it was accepted`
            : `${party.faults} of its submissions failed by its own doing in the last ${admission.windowSec} s (a payment or call that stopped working after it was accepted)`),
      )
    }
    const throttled = party.faults >= limits.throttleAfter
    const allowed = throttled ? 1 : limits.maxActive
    const refuse = (active: number) => {
      context.refused?.(busy)
      return new ToolError(
        `refused: ${who} has ${active} active submission${active === 1 ? '' : 's'}, the most it may have` +
          (throttled ? ` while throttled (${party.faults} recent failures of its own doing)` : '') +
          ': wait for one to be done or failed',
      )
    }
    if (party.active >= allowed) throw refuse(party.active)
    return { allowed, refuse }
  }
  const payerJudged = judge(standing.payer, `the account ${payer}`, admission.account, true, 'account_banned', 'account_busy')
  const clientJudged =
    standing.client && client !== undefined ? judge(standing.client, `the client ${client}`, admission.client, false, 'client_banned', 'client_busy') : undefined
  return {
    caps: { payer: payerJudged.allowed, ...(clientJudged ? { client: clientJudged.allowed } : {}) },
    busy: (reached) => (reached.party === 'client' && clientJudged ? clientJudged : payerJudged).refuse(reached.active),
  }
}
