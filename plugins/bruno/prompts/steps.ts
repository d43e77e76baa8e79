/**
 * Steps the Calibur prompts share, numbered from `first`: sign the batch, turn it into a call,
 * submit it, follow it. What the wallet gets is said once, here, the same way in every prompt.
 *
 * @example
 * signedBatchSteps(4, 'local', false) // ['4. Have the account\'s wallet sign …', '5. `calibur_execute` …', …]
 */
export function signedBatchSteps(first: number, chain: string, withAuthorization: boolean): string[] {
  return numbered(first, [
    'Have the account\'s wallet sign `paymentTypedData` and `typedData` with its sign-typed-data tool, passing each UNCHANGED ' +
      '(domain with its salt, types with EIP712Domain, primaryType, message: exactly as calibur_batch returned them). Only the ' +
      'account\'s own key can sign a Calibur batch: smart-wallet signers (ERC-1271 / ERC-6492) cannot.',
    `\`calibur_execute\` with {chain: "${chain}", paymentTypedData, paymentSignature, typedData, signature (both typed data whole, unchanged)` +
      (withAuthorization ? ', authorizationList (the same list)}' : '}') +
      '. It checks what Calibur will check and returns `call` and `payment`.',
    `\`submit\` with {chain: "${chain}", call, payment` +
      (withAuthorization ? ', authorizationList' : '') +
      '} exactly as calibur_execute returned them. It answers at once with an `id`.',
    'Poll `status` with {id} until the stage is `done` (give me the transaction hash, the fee and whether outcome.callSucceeded: ' +
      'a call that failed on chain still paid) or `failed` (give me the reason).',
  ])
}

/** Lines `first.`, `first+1.`, … */
export function numbered(first: number, steps: readonly string[]): string[] {
  return steps.map((step, index) => `${first + index}. ${step}`)
}

/** Said at the end of every prompt: a refusal is reported, not worked around. */
export const ON_REFUSAL =
  'If a tool refuses, tell me its reason and stop; never change amounts, addresses or the typed data to get past a refusal without asking me.'
