import t from 'tap'
import { TypeCompiler } from '@sinclair/typebox/compiler'
import { privateKeyToAccount } from 'viem/accounts'
import { SignedAuthorization, yParityOf } from '../core/relay/schemas.ts'
import { viemAuthorizations } from '../core/relay/delegation7702.ts'

// viem's signAuthorization output, as an agent sends it over MCP (JSON, bigints turned into
// strings or numbers), is a valid authorizationList item; a v/yParity pair that disagree is not.

const check = TypeCompiler.Compile(SignedAuthorization)
const account = privateKeyToAccount('0x0000000000000000000000000000000000000000000000000000000000000001')
const signed = await account.signAuthorization({ address: '0x000000005c84F8Fd50b21CAC312528A64437030e', chainId: 31337, nonce: 0 })

const asString = JSON.parse(JSON.stringify(signed, (_key, value) => (typeof value === 'bigint' ? value.toString() : value)))
const asNumber = JSON.parse(JSON.stringify(signed, (_key, value) => (typeof value === 'bigint' ? Number(value) : value)))
const asHex = JSON.parse(JSON.stringify(signed, (_key, value) => (typeof value === 'bigint' ? `0x${value.toString(16)}` : value)))

t.test('viem\'s output after a JSON round trip is accepted, with yParity or v alone', async (t) => {
  t.equal(typeof signed.v, 'bigint', 'viem 2.57 returns v as a bigint beside yParity')
  t.throws(() => JSON.stringify(signed), { name: 'TypeError' }, 'so it cannot go into JSON as it is (the instructions say what to send instead)')
  for (const item of [asString, asNumber, asHex]) {
    t.ok(check.Check(item), JSON.stringify(item))
    const { yParity: _dropped, ...vOnly } = item
    t.ok(check.Check(vOnly), `v alone: ${vOnly.v}`)
    t.equal(yParityOf(vOnly), signed.yParity, 'yParity derived from v')
    t.equal(viemAuthorizations([vOnly])![0]!.yParity, signed.yParity, 'and passed to viem')
  }
  const { v: _v, ...yOnly } = asString
  t.ok(check.Check(yOnly), 'yParity alone')
  for (const v of [0, 1, 27, 28, '0', '1', '27', '28', '0x0', '0x1', '0x1b', '0x1c', '0x1B']) {
    const { yParity: _y, ...rest } = asString
    t.ok(check.Check({ ...rest, v }), `v ${JSON.stringify(v)}`)
    t.equal(yParityOf({ ...rest, v } as SignedAuthorization), [1, 28].includes(Number(v)) ? 1 : 0)
  }
})

t.test('refused: v and yParity that disagree, a v that names no parity, neither', async (t) => {
  const { yParity: _y, v: _v, ...bare } = asString
  t.notOk(check.Check({ ...bare, yParity: 0, v: 28 }))
  t.notOk(check.Check({ ...bare, yParity: 1, v: '27' }))
  t.notOk(check.Check({ ...bare, yParity: 0, v: '0x1' }))
  t.notOk(check.Check({ ...bare, v: 37 }), 'an EIP-155 v is not an authorization\'s')
  t.notOk(check.Check({ ...bare, v: '0x' }))
  t.notOk(check.Check(bare), 'neither v nor yParity')
  t.notOk(check.Check({ ...asString, extra: 1 }), 'still closed')
})
