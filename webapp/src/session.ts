// The client's view of one execution's session, built only from Socket.IO events (live or
// replayed after start_session with last_seq). Pure: reduce(state, event) -> new state.

export interface ChatMessage {
  key: string;
  role: "user" | "assistant" | "error";
  text: string;
  streaming?: boolean;
  messageId?: string; // the user's message_id: a retry resends it
  userMessagePk?: number;
  retryable?: boolean;
  retryText?: string; // what to resend on retry (the failed user message's text)
  toolPk?: number; // a tool waiting for approval
  eventName?: string;
  docVersion?: number; // "new version N of the document" (a draft_message)
}

export interface DocVersion {
  index: number;
  pk?: number;
  title: string;
  text: string;
}

export interface DocState {
  producedTextPk: number | null;
  count: number; // versions known to exist (1-based indexes 1..count)
  versions: Record<number, DocVersion>;
  shown: number; // the version on screen (0: none)
  streaming: { index: number; title: string; text: string } | null;
}

export interface SessionState {
  sessionId: string;
  lastSeq: number;
  messages: ChatMessage[];
  doc: DocState;
  order: OrderSnapshot | null;
  ticket: Record<string, unknown> | null;
  busy: boolean; // a turn is running (a user message sent, no answer yet)
  started: boolean;
  title: string | null;
  workflowTick: number; // counts workflow step events: the steps panel reloads the steps on each
}

export interface OrderSnapshot {
  state: string;
  order: Record<string, any>;
}


export type SessionEvent = [string, Record<string, any>];

export function emptySession(sessionId: string): SessionState {
  return {
    sessionId,
    lastSeq: 0,
    messages: [],
    doc: { producedTextPk: null, count: 0, versions: {}, shown: 0, streaming: null },
    order: null,
    ticket: null,
    busy: false,
    started: false,
    title: null,
    workflowTick: 0,
  };
}

const STREAM_KEY = "streaming";

function withoutStreaming(messages: ChatMessage[]): ChatMessage[] {
  return messages.filter((m) => m.key !== STREAM_KEY);
}

/** Applies one event; events of another session and already-seen seqs change nothing. */
export function reduce(state: SessionState, [name, payload]: SessionEvent): SessionState {
  if (!payload || payload.session_id !== state.sessionId) return state;
  const seq = typeof payload.seq === "number" ? payload.seq : null;
  if (seq !== null && seq <= state.lastSeq) return state; // a replayed duplicate
  const next: SessionState = { ...state, lastSeq: seq ?? state.lastSeq };
  switch (name) {
    case "user_message_reception": {
      const messages = next.messages.filter((m) => !(m.role === "error" && m.messageId === payload.message_id));
      if (messages.some((m) => m.role === "user" && m.messageId === payload.message_id && !m.key.startsWith("local"))) {
        return { ...next, messages, busy: true, started: true };
      }
      return {
        ...next,
        started: true,
        busy: true,
        messages: [
          ...messages.filter((m) => !(m.key.startsWith("local") && m.messageId === payload.message_id)),
          {
            key: `u${payload.message_pk}`, role: "user", text: String(payload.text ?? ""),
            messageId: payload.message_id, userMessagePk: payload.message_pk, eventName: payload.event_name,
          },
        ],
      };
    }
    case "user_task_execution_start":
      return { ...next, started: true };
    case "mojo_token": {
      const current = next.messages.find((m) => m.key === STREAM_KEY);
      const text = (current?.text ?? "") + String(payload.delta ?? "");
      return {
        ...next,
        busy: true,
        messages: [...withoutStreaming(next.messages), { key: STREAM_KEY, role: "assistant", text, streaming: true }],
      };
    }
    case "mojo_message": {
      const message: ChatMessage = {
        key: `m${payload.message_pk}`, role: "assistant", text: String(payload.text ?? ""),
        toolPk: payload.task_tool_execution_pk ?? undefined,
      };
      return { ...next, busy: false, messages: [...withoutStreaming(next.messages), message] };
    }
    case "draft_token": {
      // The version being written is the one after the latest known: never appended to the one shown.
      const doc = next.doc;
      const streaming = doc.streaming ?? { index: doc.count + 1, title: "", text: "" };
      const delta = String(payload.delta ?? "");
      const updated = payload.part === "title"
        ? { ...streaming, title: streaming.title + delta }
        : { ...streaming, text: streaming.text + delta };
      return { ...next, busy: true, doc: { ...doc, streaming: updated, shown: updated.index } };
    }
    case "draft_message":
    case "workflow_execution_produced_text": {
      const index = Number(payload.produced_text_version_index);
      const version: DocVersion = {
        index, pk: payload.produced_text_version_pk, title: String(payload.produced_text_title ?? ""),
        text: String(payload.produced_text ?? ""),
      };
      const doc: DocState = {
        producedTextPk: payload.produced_text_pk ?? next.doc.producedTextPk,
        count: Math.max(next.doc.count, index),
        versions: { ...next.doc.versions, [index]: version },
        shown: index,
        streaming: null,
      };
      const note: ChatMessage = { key: `m${payload.message_pk}`, role: "assistant", text: version.title, docVersion: index };
      return { ...next, busy: false, doc, messages: [...withoutStreaming(next.messages), note] };
    }
    case "error": {
      const failed = next.messages.find((m) => m.role === "user" && m.userMessagePk === payload.user_message_pk);
      const message: ChatMessage = {
        key: `e${payload.message_pk ?? seq}`, role: "error", text: String(payload.error ?? "Something went wrong."),
        messageId: payload.message_id ?? failed?.messageId, retryable: Boolean(payload.retryable),
        retryText: failed?.text, eventName: payload.kind ?? failed?.eventName,
      };
      return {
        ...next, busy: false, doc: { ...next.doc, streaming: null, shown: Math.min(next.doc.shown, next.doc.count) },
        messages: [...withoutStreaming(next.messages), message],
      };
    }
    case "order_state":
      return { ...next, order: { state: String(payload.state), order: payload.order ?? {} } };
    case "order_ticket":
      return { ...next, ticket: payload.ticket ?? null };
    case "user_task_execution_title":
    case "user_task_execution_title_summary":
      return payload.title ? { ...next, title: String(payload.title) } : next;
    case "workflow_step_execution_started":
    case "workflow_step_execution_ended":
    case "workflow_step_execution_invalidated":
      // The steps panel shows what runs: the chat is not waiting for a reply.
      return { ...next, busy: false, workflowTick: next.workflowTick + 1 };
    default:
      return next;
  }
}

/** The user's message shown at once, before the server confirms it. */
export function addLocalUserMessage(state: SessionState, text: string, messageId: string): SessionState {
  return {
    ...state,
    busy: true,
    started: true,
    messages: [
      ...state.messages.filter((m) => !(m.role === "error" && m.messageId === messageId)),
      ...(state.messages.some((m) => m.messageId === messageId && m.role === "user")
        ? []
        : [{ key: `local-${messageId}`, role: "user" as const, text, messageId }]),
    ],
  };
}

/** A version fetched over REST (reload, navigation, manual edit). */
export function withVersion(state: SessionState, version: Record<string, any>): SessionState {
  const index = Number(version.produced_text_version_index);
  const count = Math.max(state.doc.count, Number(version.produced_text_version_count ?? index));
  return {
    ...state,
    doc: {
      ...state.doc,
      producedTextPk: version.produced_text_pk ?? state.doc.producedTextPk,
      count,
      versions: {
        ...state.doc.versions,
        [index]: { index, pk: version.produced_text_version_pk, title: version.produced_text_title ?? "",
          text: version.produced_text ?? "" },
      },
      shown: state.doc.streaming ? state.doc.shown : index,
    },
  };
}

/** A retry was sent: its error goes away and the turn is running again (a retried message is not echoed). */
export function retrying(state: SessionState, messageId: string): SessionState {
  return { ...state, busy: true, messages: state.messages.filter((m) => !(m.role === "error" && m.messageId === messageId)) };
}
