// The built-in text the tiny tokenizer learns its merges from: plain English, chat turns, and a
// little TypeScript, Python and JSON, so common words, indentation and punctuation runs become
// single tokens. Changing this text changes every built-in model file (and its hash).
export const BUILT_IN_CORPUS = String.raw`
The quick brown fox jumps over the lazy dog. The dog was not amused, but the fox did not care.
Once upon a time there was a small model that wanted to learn. It read every sentence it could
find, and it tried to guess the next word. Sometimes it was right, and sometimes it was wrong.
When it was wrong, it changed a little, and the next time it was a little more often right.
This is how a language model learns: by predicting the next token, again and again, for a very
long time. The model does not understand the world the way people do, but it can be useful.

User: What is the capital of France?
Assistant: The capital of France is Paris.
User: Can you write a short poem about the sea?
Assistant: The sea is wide, the sea is deep, it sings the sailors off to sleep.
User: How many days are there in a week?
Assistant: There are seven days in a week: Monday, Tuesday, Wednesday, Thursday, Friday,
Saturday and Sunday.
User: Please explain what an API key is.
Assistant: An API key is a secret string that identifies who is making a request. The server
checks the key before it answers, and it can refuse requests that do not have a valid key.
User: Thank you! That was helpful.
Assistant: You're welcome. Let me know if there is anything else I can help you with.

We train models with reinforcement learning and supervised fine-tuning. A training job reads a
dataset of prompts and responses, computes a loss, and updates the weights of a LoRA adapter.
Each checkpoint is saved to disk and can be served at once: a request names the checkpoint and
the server loads the adapter on top of the base model. The reward for a response is a number;
higher is better. The policy is updated so that responses with a higher reward become more
likely, while a penalty keeps the new policy close to the reference model.

It's important that the results are reproducible. If you use the same seed, you should get the
same weights, the same tokens and the same output. We'll check that in the tests, and they'll
fail if anything changes. I'm sure you've seen a test that passes on one machine and fails on
another; we don't want that here.

export interface ChatMessage {
  role: "system" | "user" | "assistant";
  content: string;
}

export async function complete(messages: ChatMessage[], options: { temperature?: number } = {}): Promise<string> {
  const prompt = messages.map((message) => message.role + ": " + message.content).join("\n");
  const response = await fetch("http://127.0.0.1:8000/v1/chat/completions", {
    method: "POST",
    headers: { "content-type": "application/json", authorization: "Bearer " + apiKey },
    body: JSON.stringify({ model: "tiny-chat", messages, temperature: options.temperature ?? 0 }),
  });
  if (!response.ok) {
    throw new Error("request failed with status " + response.status);
  }
  const data = (await response.json()) as { choices: { message: { content: string } }[] };
  return data.choices[0]?.message.content ?? "";
}

for (let i = 0; i < tokens.length; i++) {
  const token = tokens[i];
  if (token === undefined) continue;
  const count = counts.get(token) ?? 0;
  counts.set(token, count + 1);
}

def train(model, dataset, epochs=3, learning_rate=1e-4):
    optimizer = Adam(model.parameters(), lr=learning_rate)
    for epoch in range(epochs):
        total_loss = 0.0
        for batch in dataset:
            optimizer.zero_grad()
            loss = model(batch["input_ids"], labels=batch["labels"]).loss
            loss.backward()
            optimizer.step()
            total_loss += loss.item()
        print(f"epoch {epoch}: loss {total_loss / len(dataset):.4f}")
    return model

class Tokenizer:
    def __init__(self, vocab, merges):
        self.vocab = vocab
        self.merges = merges

    def encode(self, text):
        return [self.vocab[token] for token in self.split(text)]

{"model": "tiny-chat", "messages": [{"role": "user", "content": "Hello, world!"}], "max_tokens": 16}
{"id": "chatcmpl-1", "object": "chat.completion", "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hello! How can I help you today?"}, "finish_reason": "stop"}], "usage": {"prompt_tokens": 12, "completion_tokens": 9, "total_tokens": 21}}

Numbers: 0 1 2 3 4 5 6 7 8 9 10 16 32 64 128 256 512 1024 2048 4096 3.14 2.71 100%
Lists are useful:
- first, read the question;
- second, think about the answer;
- third, write the answer clearly and check it.
1. Install the package.
2. Start the server.
3. Send a request and read the response.
`;
