// Drives a live nanoserve server's Messages API with the official
// @anthropic-ai/sdk npm client on a reasoning model: a reply with thinking
// and a tool call, whole and streamed (the client's accumulator, the
// delta types it saw), then the streamed reply's content sent back as is
// (its thinking block with its signature) with the tool's result, and
// prints what it saw as one JSON object (server/anthropic_npm_test.go).
// Usage: node anthropic_thinking.mjs BASE_URL MODEL
import Anthropic from '@anthropic-ai/sdk'

const [baseURL, model] = process.argv.slice(2)
const client = new Anthropic({ baseURL, apiKey: 'none', maxRetries: 0 })
const tools = [{
  name: 'get_weather', description: 'Weather in a city.',
  input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
}]
const ask = { role: 'user', content: "What's the weather in Zürich?" }
const req = { model, max_tokens: 200, thinking: { type: 'enabled', budget_tokens: 100 }, tools, messages: [ask] }
const out = {}
out.whole = await client.messages.create(req)
const stream = client.messages.stream(req)
const events = []
stream.on('streamEvent', (ev) => { events.push(ev.type === 'content_block_delta' ? ev.delta.type : ev.type) })
out.stream = await stream.finalMessage()
out.events = events
const use = out.stream.content.find((b) => b.type === 'tool_use')
out.answer = await client.messages.create({
  ...req,
  messages: [ask, { role: 'assistant', content: out.stream.content }, { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: '{"temp": 21}' }] }],
})
console.log(JSON.stringify(out))
