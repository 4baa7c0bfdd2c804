// Drives a live nanoserve server's Responses API with the official openai
// npm client and prints what it saw as one JSON object
// (server/responses_npm_test.go reads it and replays each request on
// /v1/chat/completions). Usage: node responses_client.mjs BASE_URL MODEL
import OpenAI from 'openai'

const [baseURL, model] = process.argv.slice(2)
const client = new OpenAI({ baseURL, apiKey: 'unused', maxRetries: 0 })
const out = {}
const plain = { model, instructions: 'Be brief.', input: 'Tell me a story', max_output_tokens: 12, temperature: 0 }

// output_text is the client's convenience on whole responses; a streamed
// event's response has only its output items.
const textOf = (r) => r.output.filter((o) => o.type === 'message').flatMap((o) => o.content).map((c) => c.text).join('')
const summary = (r) => ({
  id: r.id, status: r.status, text: r.output_text ?? textOf(r),
  reasoning: r.output.filter((o) => o.type === 'reasoning').flatMap((o) => o.content ?? []).map((c) => c.text).join(''), usage: r.usage, incomplete: r.incomplete_details?.reason ?? null,
  output: r.output.map((o) => ({ type: o.type, call_id: o.call_id, name: o.name, arguments: o.arguments })),
})

out.plain = summary(await client.responses.create(plain))

// Streamed: the raw events, their text, and the final response they carry.
const events = []
let text = ''
let final = null
for await (const ev of await client.responses.create({ ...plain, stream: true })) {
  events.push(ev.type)
  if (ev.type === 'response.output_text.delta') text += ev.delta
  if (ev.type === 'response.completed' || ev.type === 'response.incomplete') final = summary(ev.response)
}
out.stream = { events, text, final }

// The client's own stream helper accumulates the events into a response
// (and checks their order and indices).
const helper = client.responses.stream(plain)
let helperText = ''
helper.on('response.output_text.delta', (ev) => { helperText += ev.delta })
out.helper = { ...summary(await helper.finalResponse()), deltas: helperText }

// A function-tool round trip: the call is forced (the random-weight model
// writes it under the call's grammar), then its output goes back.
const tools = [{
  type: 'function', name: 'get_weather', description: 'Current weather in a city.', strict: true,
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false },
}]
const ask = [{ role: 'user', content: "What's the weather in Zurich?" }]
const call = await client.responses.create({
  model, input: ask, tools, tool_choice: { type: 'function', name: 'get_weather' }, max_output_tokens: 120, temperature: 0,
})
out.call = summary(call)
const callEvents = []
let args = ''
let argsDone = null
for await (const ev of await client.responses.create({
  model, input: ask, tools, tool_choice: { type: 'function', name: 'get_weather' }, max_output_tokens: 120, temperature: 0, stream: true,
})) {
  callEvents.push(ev.type)
  if (ev.type === 'response.function_call_arguments.delta') args += ev.delta
  if (ev.type === 'response.function_call_arguments.done') argsDone = ev.arguments
}
out.callStream = { events: callEvents, args, argsDone }
const fc = call.output.find((o) => o.type === 'function_call')
const result = { type: 'function_call_output', call_id: fc.call_id, output: '{"temp": 21}' }
out.answer = summary(await client.responses.create({
  model, input: [...ask, ...call.output, result], tools, max_output_tokens: 12, temperature: 0,
}))
// The same second turn through previous_response_id.
out.answerPrev = summary(await client.responses.create({
  model, previous_response_id: call.id, input: [result], tools, max_output_tokens: 12, temperature: 0,
}))

// Structured output: text.format json_schema.
const schema = {
  type: 'object', properties: { name: { type: 'string', maxLength: 8 }, age: { type: 'integer' } }, required: ['name', 'age'], additionalProperties: false,
}
out.json = summary(await client.responses.create({
  model, input: 'Describe a person as JSON.', text: { format: { type: 'json_schema', name: 'person', schema, strict: true } },
  max_output_tokens: 60, temperature: 0,
}))

try {
  await client.responses.create({ model, previous_response_id: 'resp_forgotten', input: 'Hi' })
  out.gone = { ok: true }
} catch (e) {
  out.gone = { status: e.status, message: e.message }
}
console.log(JSON.stringify(out))
