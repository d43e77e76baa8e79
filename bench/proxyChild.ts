import { countingProxy, type WatchAction } from './proxy.ts'

// The counting proxy in a process of its own, so that its forwarding never waits on the bench
// driver's event loop. IPC: { type: 'count' } → { type: 'count', count }; { type: 'since', mark }
// → { type: 'since', trips }; { type: 'tag', prefix } → { type: 'tagged' }; { type: 'watch', key,
// action } → { type: 'watched' } (the soak's keys: bench/proxy.ts).

const target = process.argv[2]
if (!target || !process.send) throw new Error('usage: fork proxyChild.ts <node url> (with IPC)')
const send = process.send.bind(process)
const proxy = await countingProxy(target)
process.on('message', (message: { type: string; mark?: number; prefix?: string; key?: string; action?: WatchAction }) => {
  if (message.type === 'count') send({ type: 'count', count: proxy.count })
  else if (message.type === 'since') send({ type: 'since', trips: proxy.since(message.mark ?? 0) })
  else if (message.type === 'tag') {
    proxy.tag(message.prefix!)
    send({ type: 'tagged' })
  } else if (message.type === 'watch') {
    proxy.watch(message.key!, message.action!)
    send({ type: 'watched' })
  } else if (message.type === 'stop') void proxy.close().then(() => process.exit(0))
})
process.on('disconnect', () => process.exit(0))
send({ type: 'ready', url: proxy.url })
