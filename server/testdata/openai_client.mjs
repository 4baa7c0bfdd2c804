// Drives a live nanoserve server with the official openai npm client and
// prints what it saw as one JSON object (server/openai_npm_test.go reads
// it). Usage: node openai_client.mjs BASE_URL MODEL
import OpenAI from 'openai'

const [baseURL, model] = process.argv.slice(2)
const client = new OpenAI({ baseURL, apiKey: 'unused', maxRetries: 0 })
const out = {}
const messages = [{ role: 'user', content: 'Tell me a story' }]

out.models = (await client.models.list()).data.map((m) => m.id)
const chat = await client.chat.completions.create({ model, messages, max_tokens: 12, temperature: 0 })
out.chat = { content: chat.choices[0].message.content, finish: chat.choices[0].finish_reason, usage: chat.usage }
out.chatStream = { text: '', chunks: 0 }
const stream = await client.chat.completions.create({
  model, messages, max_tokens: 12, temperature: 0, stream: true, stream_options: { include_usage: true },
})
for await (const chunk of stream) {
  out.chatStream.chunks++
  if (chunk.choices.length > 0) {
    out.chatStream.text += chunk.choices[0].delta.content ?? ''
    if (chunk.choices[0].finish_reason) out.chatStream.finish = chunk.choices[0].finish_reason
  }
  if (chunk.usage) out.chatStream.usage = chunk.usage
}
const comp = await client.completions.create({ model, prompt: 'Once upon a time', max_tokens: 12, temperature: 0 })
out.completion = comp.choices[0].text
// The client asks for base64 embeddings by default and decodes them.
const emb = await client.embeddings.create({ model, input: ['Once upon a time', 'The little dog'] })
out.embeddings = emb.data.map((d) => d.embedding)
const embFloat = await client.embeddings.create({ model, input: 'Once upon a time', encoding_format: 'float' })
out.embeddingFloat = embFloat.data[0].embedding
try {
  await client.chat.completions.create({ model: 'no-such-model', messages })
  out.unknown = { ok: true }
} catch (e) {
  out.unknown = { status: e.status, message: e.message }
}
console.log(JSON.stringify(out))
