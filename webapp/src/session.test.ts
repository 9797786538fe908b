import { describe, expect, it } from "vitest";
import { fieldMessage, friendlyError } from "./api";
import { texts } from "./i18n";
import { stripTags } from "./components/Markdown";
import { addLocalUserMessage, emptySession, reduce, retrying, withVersion, type SessionEvent } from "./session";

const S = "session-1";
const ev = (name: string, seq: number, payload: Record<string, unknown> = {}): SessionEvent =>
  [name, { session_id: S, seq, ...payload }];
const run = (events: SessionEvent[], start = emptySession(S)) => events.reduce(reduce, start);

const version1 = ev("draft_message", 5, { produced_text_pk: 9, produced_text_version_pk: 91,
  produced_text_version_index: 1, produced_text_title: "Hello", produced_text: "Body one", message_pk: 3 });

describe("stream", () => {
  it("accumulates tokens into one streaming reply, replaced by the final message", () => {
    const state = run([ev("user_message_reception", 1, { message_pk: 1, message_id: "a", text: "hi" }),
      ev("mojo_token", 2, { delta: "Hel" }), ev("mojo_token", 3, { delta: "lo" })]);
    expect(state.messages.map((m) => m.text)).toEqual(["hi", "Hello"]);
    expect(state.busy).toBe(true);
    const done = reduce(state, ev("mojo_message", 4, { message_pk: 2, text: "Hello!" }));
    expect(done.messages.map((m) => [m.role, m.text, m.streaming ?? false]))
      .toEqual([["user", "hi", false], ["assistant", "Hello!", false]]);
    expect(done.busy).toBe(false);
  });

  it("ignores events of other sessions and seqs already seen", () => {
    const state = run([ev("mojo_token", 2, { delta: "a" })]);
    expect(reduce(state, ev("mojo_token", 2, { delta: "a" }))).toBe(state);
    expect(reduce(state, ["mojo_token", { session_id: "other", seq: 3, delta: "x" }])).toBe(state);
  });

  it("a replay after a reconnect adds exactly the missing text", () => {
    const all = [ev("mojo_token", 1, { delta: "one " }), ev("mojo_token", 2, { delta: "two " }),
      ev("mojo_token", 3, { delta: "three" })];
    const before = run(all.slice(0, 2));
    // the server replays from last_seq = 2; a duplicate of 2 may arrive too
    const after = run([all[1], all[2]], before);
    expect(after.messages[0].text).toBe("one two three");
    expect(after.lastSeq).toBe(3);
  });

  it("streams version 2 into version 2, never onto version 1", () => {
    let state = run([version1]);
    state = run([ev("draft_token", 6, { part: "title", delta: "New" }), ev("draft_token", 7, { part: "draft", delta: "Two" })], state);
    expect(state.doc.versions[1].text).toBe("Body one");
    expect(state.doc.streaming).toEqual({ index: 2, title: "New", text: "Two" });
    expect(state.doc.shown).toBe(2);
    state = reduce(state, ev("draft_message", 8, { produced_text_pk: 9, produced_text_version_pk: 92,
      produced_text_version_index: 2, produced_text_title: "New", produced_text: "Two!", message_pk: 4 }));
    expect(state.doc.count).toBe(2);
    expect(state.doc.versions[2].text).toBe("Two!");
    expect(state.doc.streaming).toBeNull();
  });

  it("an error ends the stream and offers a retry with the failed message's id and text", () => {
    let state = run([ev("user_message_reception", 1, { message_pk: 7, message_id: "m1", text: "do it" }),
      ev("mojo_token", 2, { delta: "par" })]);
    state = reduce(state, ev("error", 3, { error: "The assistant failed.", user_message_pk: 7, message_pk: 8,
      message_id: "m1", retryable: true }));
    const error = state.messages.at(-1)!;
    expect(state.messages.some((m) => m.streaming)).toBe(false);
    expect([error.role, error.messageId, error.retryText, error.retryable]).toEqual(["error", "m1", "do it", true]);
    // the retry's echo removes the error
    state = reduce(state, ev("user_message_reception", 4, { message_pk: 7, message_id: "m1", text: "do it" }));
    expect(state.messages.filter((m) => m.role === "error")).toEqual([]);
  });

  it("a local message is shown at once and replaced by the server's echo", () => {
    let state = addLocalUserMessage(emptySession(S), "hello", "id1");
    expect(state.messages).toHaveLength(1);
    state = reduce(state, ev("user_message_reception", 1, { message_pk: 3, message_id: "id1", text: "hello" }));
    expect(state.messages.map((m) => m.key)).toEqual(["u3"]);
  });

  it("a REST version raises the count without hiding a version being written", () => {
    const state = withVersion(run([version1]), { produced_text_pk: 9, produced_text_version_index: 2,
      produced_text_version_count: 2, produced_text_title: "Edited", produced_text: "Mine" });
    expect([state.doc.count, state.doc.shown, state.doc.versions[2].text]).toEqual([2, 2, "Mine"]);
  });

  it("order events keep the latest state and ticket", () => {
    const state = run([ev("order_state", 1, { state: "Ordering", order: { total: 3 } }),
      ev("order_ticket", 2, { ticket: { ticket_id: "T1" } })]);
    expect(state.order?.state).toBe("Ordering");
    expect(state.ticket).toEqual({ ticket_id: "T1" });
  });
});

describe("friendly errors", () => {
  const t = texts("en");
  it("never shows API paths", () => {
    expect(friendlyError(400, "inputs.customer_message: is required", "inputs.customer_message", t))
      .toBe("Please fill in this field.");
    expect(fieldMessage("inputs.tone: must be one of: formal, friendly", t)).toBe("Please choose one of the options.");
    expect(friendlyError(500, "internal server error", null, t)).toBe(t.errServer);
    expect(friendlyError(404, "user_task_execution not found", null, t)).toBe(t.errNotFound);
    expect(friendlyError(0, "", null, t)).toBe(t.errNetwork);
  });
  it("speaks French to French users", () => {
    expect(friendlyError(400, "inputs.x: is required", "inputs.x", texts("fr"))).toBe("Veuillez remplir ce champ.");
  });
});

describe("markdown text", () => {
  it("drops protocol tags and hidden reasoning", () => {
    expect(stripTags("<reasoning>secret</reasoning>Hi <user_language>en</user_language>**there**"))
      .toBe("Hi **there**");
  });
});

describe("workflow (the steps panel reloads the steps on each step event)", () => {
  it("counts step events and takes the workflow's text as a version", () => {
    const state = run([
      ev("workflow_step_execution_started", 1, { user_workflow_step_execution_pk: 4 }),
      ev("workflow_step_execution_ended", 2, { user_workflow_step_execution_pk: 4 }),
      ev("workflow_step_execution_invalidated", 3, { user_workflow_step_execution_pk: 4 }),
      ev("workflow_execution_produced_text", 4, { produced_text_pk: 1, produced_text_version_pk: 11,
        produced_text_version_index: 1, produced_text_title: "Poem", produced_text: "Waves", message_pk: 9 }),
    ]);
    expect(state.workflowTick).toBe(3);
    expect(state.doc.versions[1].text).toBe("Waves");
  });
});

describe("retry of a form start or an edit (no echo from the server)", () => {
  it("removes the error and shows the turn as running", () => {
    const failed = run([ev("error", 1, { error: "Failed.", message_id: "form_start", retryable: true, message_pk: 2 })]);
    const again = retrying(failed, "form_start");
    expect(again.messages).toEqual([]);
    expect(again.busy).toBe(true);
  });
});
