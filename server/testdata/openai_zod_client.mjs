// Asks a live nanoserve server for structured output through the official
// openai npm client's Zod helper, as an application would, and prints what
// it got as one JSON object (server/openai_zod_npm_test.go reads it).
// Usage: node openai_zod_client.mjs BASE_URL MODEL RUNS
import OpenAI from 'openai'
import { zodResponseFormat } from 'openai/helpers/zod'
import { z } from 'zod'

const [baseURL, model, runs] = process.argv.slice(2)
const client = new OpenAI({ baseURL, apiKey: 'unused', maxRetries: 0 })
const Contact = z.object({
  email: z.string().email(),
  step: z.number().multipleOf(0.5),
  when: z.string().datetime(),
})
const format = zodResponseFormat(Contact, 'contact')
const out = { schema: format.json_schema.schema, results: [] }
for (let seed = 1; seed <= Number(runs); seed++) {
  try {
    // parse() sends the schema and parses the reply with Zod itself.
    const r = await client.chat.completions.parse({
      model, messages: [{ role: 'user', content: 'Who wrote, and when?' }],
      response_format: format, max_tokens: 400, temperature: 1, seed,
    })
    const m = r.choices[0].message
    out.results.push({ content: m.content, parsed: m.parsed, finish: r.choices[0].finish_reason })
  } catch (e) {
    out.results.push({ error: String(e?.message ?? e), status: e?.status })
  }
}
console.log(JSON.stringify(out))
