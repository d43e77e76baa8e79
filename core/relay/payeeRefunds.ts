import { BaseError, ContractFunctionRevertedError, ContractFunctionZeroDataError, getAddress } from 'viem'
import { payeeVaultAbi } from '../../contracts/abi.ts'
import type { RelayContext } from './context.ts'

/**
 * Whether the chain's payee refunds what a relay did not cost: a contract whose `runner()` is this
 * chain's Runner (a PayeeVault). Read once per chain and kept (a failed read is asked again next
 * time). A quote uses it to say what a payment is expected to cost; a relay learns it for certain
 * from its probe, which has the payee make the refund.
 *
 * @example
 * await payeeRefunds(context) // true: the payee is this Runner's PayeeVault
 */
export function payeeRefunds(context: RelayContext): Promise<boolean> {
  const { client, config } = context.network
  context.payeeRefunds ??= client
    .readContract({ address: getAddress(config.payee), abi: payeeVaultAbi, functionName: 'runner' })
    .then(
      (runner) => getAddress(runner) === getAddress(config.runner.contract),
      (error: unknown) => {
        // An account, or a contract with no `runner()`: it refunds nothing. Anything else is asked again.
        if (isNoAnswer(error)) return false
        context.payeeRefunds = undefined
        throw error
      },
    )
  return context.payeeRefunds
}

function isNoAnswer(error: unknown): boolean {
  return error instanceof BaseError && error.walk((cause) => cause instanceof ContractFunctionZeroDataError || cause instanceof ContractFunctionRevertedError) !== null
}
