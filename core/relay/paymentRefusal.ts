import { ToolError } from '../tool/tool.ts'

/**
 * What of a signed-transfer payment a refusal is about: the field a caller mends, and what x402
 * names in its error codes (core/x402/errorReason.ts).
 */
export type PaymentProblem = 'signature' | 'value' | 'valid_after' | 'valid_before' | 'recipient' | 'funds' | 'nonce' | 'token' | 'payer'

/**
 * A refusal caused by the payment rather than the call: a `ToolError` (the caller's, with its
 * words) that also says which part of the payment is wrong, for a binding that answers in codes.
 *
 * @example
 * throw new PaymentRefusal('the signed transfer pays 0x…, not the payee 0x…', 'recipient')
 */
export class PaymentRefusal extends ToolError {
  constructor(
    message: string,
    readonly problem: PaymentProblem,
  ) {
    super(message)
  }
}
