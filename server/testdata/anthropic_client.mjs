// Drives a live nanoserve server's Messages API with the official
// @anthropic-ai/sdk npm client and prints what it saw as one JSON object
// (server/anthropic_npm_test.go reads it and replays each request on
// /v1/chat/completions). Usage: node anthropic_client.mjs BASE_URL MODEL API_KEY
import Anthropic from '@anthropic-ai/sdk'

const [baseURL, model, apiKey] = process.argv.slice(2)
const client = new Anthropic({ baseURL, apiKey, maxRetries: 0 })
const out = {}
const plain = { model, system: 'Be brief.', messages: [{ role: 'user', content: 'Tell me a story' }], max_tokens: 12, temperature: 0 }

const summary = (m) => ({
  id: m.id, role: m.role, stop_reason: m.stop_reason, stop_sequence: m.stop_sequence, usage: m.usage,
  text: m.content.filter((b) => b.type === 'text').map((b) => b.text).join(''),
  thinking: m.content.filter((b) => b.type === 'thinking').map((b) => b.thinking).join(''),
  content: m.content.map((b) => ({ type: b.type, id: b.id, name: b.name, input: b.input })),
})

out.plain = summary(await client.messages.create(plain))

// messages.stream: the client's accumulator, its text events, the raw event types.
const stream = client.messages.stream(plain)
let text = ''
const events = []
stream.on('text', (t) => { text += t })
stream.on('streamEvent', (ev) => { events.push(ev.type) })
out.stream = { ...summary(await stream.finalMessage()), deltas: text, events }

// stop_sequences: a piece of the plain reply ends the reply there.
const stop = out.plain.text.slice(3, 6)
out.stop = { seq: stop, ...summary(await client.messages.create({ ...plain, stop_sequences: [stop] })) }

// A tool round trip: the call is forced (the random-weight model writes it
// under the call's grammar), then its result goes back.
const tools = [{
  name: 'get_weather', description: 'Current weather in a city.',
  input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
}]
const ask = { role: 'user', content: "What's the weather in Zurich?" }
const forced = { model, messages: [ask], tools, tool_choice: { type: 'tool', name: 'get_weather' }, max_tokens: 120, temperature: 0 }
const call = await client.messages.create(forced)
out.call = summary(call)
const callStream = client.messages.stream(forced)
const partial = []
callStream.on('inputJson', (p) => { partial.push(p) })
out.callStream = { ...summary(await callStream.finalMessage()), partial: partial.join('') }
const use = call.content.find((b) => b.type === 'tool_use')
out.answer = summary(await client.messages.create({
  model, tools, max_tokens: 12, temperature: 0,
  messages: [ask, { role: 'assistant', content: call.content }, { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: '{"temp": 21}' }] }],
}))

out.count = await client.messages.countTokens({ model, system: plain.system, messages: plain.messages })
out.countTools = await client.messages.countTokens({ model, messages: [ask], tools, tool_choice: forced.tool_choice })

try {
  await client.messages.create({ ...plain, max_tokens: 0 })
  out.bad = { ok: true }
} catch (e) {
  out.bad = { status: e.status, type: e.error?.error?.type, message: e.error?.error?.message }
}
try {
  await new Anthropic({ baseURL, apiKey: 'wrong', maxRetries: 0 }).messages.create(plain)
  out.unauthorized = { ok: true }
} catch (e) {
  out.unauthorized = { status: e.status, type: e.error?.error?.type }
}
console.log(JSON.stringify(out))
