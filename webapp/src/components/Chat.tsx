import { useEffect, useRef, useState, type Dispatch, type FormEvent } from "react";
import { ApiError, type Api } from "../api";
import type { Texts } from "../i18n";
import { type ChatMessage, type SessionState } from "../session";
import type { ExecutionView } from "./Execution";
import { Markdown } from "./Markdown";

export function Chat({ t, api, view, state, dispatch }: {
  t: Texts; api: Api; view: ExecutionView; state: SessionState; dispatch: Dispatch<any>;
}) {
  const [text, setText] = useState("");
  const [error, setError] = useState("");
  const [decided, setDecided] = useState<Record<number, boolean>>({});
  const list = useRef<HTMLOListElement>(null);
  const pk = view.user_task_execution_pk;
  const closed = state.order?.state === "Idle"; // a finished order takes no more messages

  useEffect(() => {
    list.current?.lastElementChild?.scrollIntoView?.({ block: "end" });
  }, [state.messages]);

  const send = async (body: string, messageId: string) => {
    setError("");
    dispatch(["local", { text: body, messageId }]);
    try {
      await api.call("PUT", "/user_message", { session_id: view.session_id, user_task_execution_pk: pk, text: body,
        message_id: messageId });
    } catch (exc) {
      setError(exc instanceof ApiError ? exc.friendly : t.errServer);
    }
  };

  const submit = (event: FormEvent) => {
    event.preventDefault();
    if (!text.trim()) return;
    const body = text;
    setText("");
    void send(body, crypto.randomUUID());
  };

  const retry = async (message: ChatMessage) => {
    setError("");
    try {
      if (message.messageId === "form_start") {
        await api.call("POST", "/user_task_execution_run", { user_task_execution_pk: pk,
          inputs: view.json_inputs_values });
        dispatch(["retrying", message.messageId]);
      } else if (message.eventName === "text_edit_action") {
        const pending = JSON.parse(sessionStorage.getItem(`edit-${message.messageId}`) ?? "{}");
        await api.call("POST", "/text_edit_action", { ...pending, message_id: message.messageId });
        dispatch(["retrying", message.messageId!]);
      } else if (message.messageId && message.retryText !== undefined) {
        await send(message.retryText, message.messageId);
      }
    } catch (exc) {
      setError(exc instanceof ApiError ? exc.friendly : t.errServer);
    }
  };

  const stop = () => api.call("POST", "/user_task_execution_stop", { user_task_execution_pk: pk })
    .catch((exc) => setError(exc.friendly));

  const decide = async (toolPk: number, approved: boolean) => {
    try {
      await api.call("POST", "/task_tool_execution", { task_tool_execution_pk: toolPk, approved });
      setDecided({ ...decided, [toolPk]: approved });
    } catch (exc) {
      setError(exc instanceof ApiError ? exc.friendly : t.errServer);
    }
  };

  const lastError = [...state.messages].reverse().find((m) => m.role !== "user");
  return (
    <div className="chat">
      <ol className="messages" ref={list} aria-live="polite">
        {state.messages.map((message) => (
          <li key={message.key} className={`message ${message.role}${message.streaming ? " streaming" : ""}`}>
            {message.role === "user" ? <p>{message.text}</p> : message.role === "error" ? (
              <div>
                <p>{message.text}</p>
                {message.retryable && lastError?.key === message.key && (
                  <button onClick={() => retry(message)}>{t.retry}</button>
                )}
              </div>
            ) : (
              <>
                {message.toolPk !== undefined && <p className="tool-label">{t.toolWaiting}</p>}
                {message.docVersion !== undefined ? (
                  <p className="doc-note">📄 {t.version} {message.docVersion}{message.text ? <>: <strong>{message.text}</strong></> : null}</p>
                ) : <Markdown text={message.text} />}
                {message.toolPk !== undefined && (
                  decided[message.toolPk] === undefined ? (
                    <div className="row">
                      <button onClick={() => decide(message.toolPk!, true)}>{t.approve}</button>
                      <button onClick={() => decide(message.toolPk!, false)}>{t.decline}</button>
                    </div>
                  ) : <p className="tool-label">{decided[message.toolPk] ? t.approved : t.declined}</p>
                )}
              </>
            )}
          </li>
        ))}
      </ol>
      {state.busy && <p className="typing" role="status">{t.thinking}</p>}
      {error && <p className="error" role="alert">{error}</p>}
      <form className="composer" onSubmit={submit}>
        <label htmlFor="chat-text" className="sr-only">{t.message}</label>
        <input id="chat-text" value={text} placeholder={t.message} autoComplete="off" disabled={closed}
          onChange={(e) => setText(e.target.value)} />
        {state.busy ? (
          <button type="button" className="stop" onClick={stop}>{t.stop}</button>
        ) : (
          <button type="submit" disabled={!text.trim()}>{t.send}</button>
        )}
      </form>
    </div>
  );
}
