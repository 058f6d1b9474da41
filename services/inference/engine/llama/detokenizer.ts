// Generated tokens to text one token at a time, without decoding everything generated so far on
// every token (quadratic in the output's length). As vLLM's incremental detokenizer does: the new
// tokens are decoded together with the few before them, and the text they add is committed once
// it ends on a whole character; until then it is held back.
import type { Token } from "node-llama-cpp";

export class IncrementalDetokenizer {
  private readonly tokens: Token[] = [];
  /** Tokens before `readOffset` are committed; those from `prefixOffset` give the next decode its context. */
  private prefixOffset = 0;
  private readOffset = 0;
  private committed = "";

  constructor(private readonly decode: (tokens: Token[]) => string) {}

  /** Adds a token; returns the text so far, up to the last whole character. */
  push(token: Token): string {
    this.tokens.push(token);
    const tail = this.tail();
    if (tail.text !== "" && tail.inContext && !tail.text.endsWith("\uFFFD")) {
      this.committed += tail.text;
      this.prefixOffset = this.readOffset;
      this.readOffset = this.tokens.length;
    }
    return this.committed;
  }

  /** The whole text, including a tail that does not end on a whole character (as U+FFFD). */
  full(): string {
    return this.committed + this.tail().text;
  }

  /** The text the tokens after `readOffset` add, decoded after the context tokens before them. */
  private tail(): { text: string; inContext: boolean } {
    const before = this.decode(this.tokens.slice(this.prefixOffset, this.readOffset));
    const after = this.decode(this.tokens.slice(this.prefixOffset));
    // Where the context decodes differently once followed by the new tokens, the decode of the
    // whole window stands (and nothing is committed from it yet).
    return after.startsWith(before) ? { text: after.slice(before.length), inContext: true } : { text: after, inContext: false };
  }
}
