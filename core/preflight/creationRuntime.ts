import type { Abi, Hex, PublicClient } from 'viem'
import { encodeDeployData } from 'viem'

/**
 * The runtime code a contract's creation code returns for these constructor arguments, computed by
 * the chain itself (an `eth_call` without `to`): immutables come out filled in exactly as a real
 * deployment writes them, so the result compares byte for byte with the code at an address.
 *
 * @example
 * const expected = await creationRuntime(client, runnerArtifact, [operator, owner])
 * const ok = (await client.getCode({ address: runner })) === expected
 */
export async function creationRuntime(client: PublicClient, artifact: { abi: Abi; bytecode: Hex }, args: readonly unknown[]): Promise<Hex | undefined> {
  const { data } = await client.call({ data: encodeDeployData({ abi: artifact.abi, bytecode: artifact.bytecode, args }) })
  return data
}
