import type { PaymentProblem } from '../relay/paymentRefusal.ts'

/**
 * x402's error code for each part of a payment the relay refuses (x402 v2 §9, "exact" on EVM):
 * what `PAYMENT-RESPONSE.errorReason` says beside the relay's own words in `errorMessage`.
 */
export const X402_ERROR_REASONS: Readonly<Record<PaymentProblem, string>> = {
  signature: 'invalid_exact_evm_payload_signature',
  value: 'invalid_exact_evm_payload_authorization_value_mismatch',
  valid_after: 'invalid_exact_evm_payload_authorization_valid_after',
  valid_before: 'invalid_exact_evm_payload_authorization_valid_before',
  recipient: 'invalid_exact_evm_payload_recipient_mismatch',
  funds: 'insufficient_funds',
  nonce: 'invalid_transaction_state',
  token: 'invalid_payment_requirements',
  payer: 'invalid_payload',
}
