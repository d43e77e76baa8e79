import t from 'tap'
import { delegateBatchTools } from '../../core/relay/delegate.ts'
import { fakeDelegate } from '../fixtures/fakeDelegate.ts'

// How the relay's texts name the delegate batches it takes (core/relay/delegate.ts): through each
// served delegate's name and batch tool, never a name of core's own.

const quiet = { errors: { abi: [], describe: () => undefined }, read: () => undefined }

t.test('delegateBatchTools: none served, one, two', async (t) => {
  t.equal(delegateBatchTools([]), 'a delegate batch (no delegate group is enabled on this server)')
  t.equal(delegateBatchTools([fakeDelegate(quiet)]), 'a Calibur batch (calibur_batch)')
  const other = fakeDelegate({ ...quiet, name: 'MetaMask', tools: { batch: 'metamask_batch', execute: 'metamask_execute' } })
  t.equal(delegateBatchTools([fakeDelegate(quiet), other]), 'a Calibur batch (calibur_batch) or a MetaMask batch (metamask_batch)')
})
