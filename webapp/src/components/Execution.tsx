// One execution: its session (events live and replayed), chat, document or order, reasoning.
import { useCallback, useEffect, useReducer, useRef, useState } from "react";
import type { Socket } from "socket.io-client";
import { ApiError, type Api } from "../api";
import type { Texts } from "../i18n";
import { addLocalUserMessage, emptySession, reduce, retrying, withVersion, type SessionEvent, type SessionState } from "../session";
import type { UserTask } from "./Catalogue";
import { Chat } from "./Chat";
import { DocumentPanel } from "./DocumentPanel";
import { OrderPanel } from "./OrderPanel";
import { Reasoning } from "./Reasoning";
import { WorkflowSteps } from "./WorkflowSteps";

export interface ExecutionView {
  user_task_execution_pk: number;
  user_task_pk: number;
  session_id: string;
  task_name: string;
  icon: string | null;
  title: string | null;
  summary: string | null;
  status: string;
  json_inputs_values: Record<string, string>;
  actions?: { user_task_pk: number; name: string; button_text: string | null; message_prefix: string | null }[];
  text_edit_actions?: { text_edit_action_pk: number; name: string; emoji: string | null; description: string }[];
}

type Action = SessionEvent | ["reset", SessionState] | ["version", Record<string, any>]
  | ["local", { text: string; messageId: string }] | ["retrying", string];

function reducer(state: SessionState, action: Action): SessionState {
  if (action[0] === "reset") return action[1] as SessionState;
  if (action[0] === "version") return withVersion(state, action[1] as Record<string, any>);
  if (action[0] === "local") return addLocalUserMessage(state, action[1].text, action[1].messageId);
  if (action[0] === "retrying") return retrying(state, action[1] as string);
  return reduce(state, action as SessionEvent);
}

export function Execution({ t, api, socket, pk, tasks }: {
  t: Texts; api: Api; socket: Socket | null; pk: number; tasks: UserTask[];
}) {
  const [view, setView] = useState<ExecutionView | null>(null);
  const [missing, setMissing] = useState(false);
  const [error, setError] = useState("");
  const [state, dispatch] = useReducer(reducer, emptySession(""));
  const [connected, setConnected] = useState(true);
  const lastSeq = useRef(0);
  lastSeq.current = state.lastSeq;

  useEffect(() => {
    api.call<ExecutionView>("GET", `/user_task_execution?user_task_execution_pk=${pk}`)
      .then((found) => {
        setView(found);
        dispatch(["reset", emptySession(found.session_id)]);
      })
      .catch((exc) => (exc instanceof ApiError && exc.status === 404 ? setMissing(true) : setError(exc.friendly)));
  }, [api, pk]);

  const loadLatestVersion = useCallback(() => {
    api.call("GET", `/user_task_execution_produced_text?user_task_execution_pk=${pk}`)
      .then((version) => dispatch(["version", version]))
      .catch(() => undefined); // no document yet
  }, [api, pk]);

  const task = tasks.find((x) => x.user_task_pk === view?.user_task_pk);
  const isOrder = task?.type === "order";
  const isWorkflow = task?.type === "workflow";

  useEffect(() => {
    if (!socket || !view) return;
    const onEvent = (name: string, payload: Record<string, any>) => dispatch([name, payload]);
    const join = () => {
      setConnected(true);
      socket.emit("start_session", { session_id: view.session_id, last_seq: lastSeq.current },
        (ack: { error?: string }) => ack?.error && setError(t.errServer));
    };
    socket.onAny(onEvent);
    socket.on("connect", join);
    const onDrop = () => setConnected(false);
    socket.on("disconnect", onDrop);
    if (socket.connected) join();
    loadLatestVersion();
    if (isOrder) {
      api.call("GET", `/order?user_task_execution_pk=${pk}`)
        .then((order) => {
          dispatch(["order_state", { session_id: view.session_id, state: order.state, order: order.order }]);
          if (order.ticket) dispatch(["order_ticket", { session_id: view.session_id, ticket: order.ticket }]);
        })
        .catch(() => undefined);
    }
    return () => {
      socket.offAny(onEvent);
      socket.off("connect", join);
      socket.off("disconnect", onDrop);
    };
  }, [socket, view, isOrder]); // eslint-disable-line react-hooks/exhaustive-deps

  if (missing) return <p role="alert" className="error">{t.notFound}</p>;
  if (!view) return error ? <p role="alert" className="error">{error}</p> : <p>{t.loading}</p>;

  const title = state.title ?? view.title ?? view.task_name;
  return (
    <section className={`execution ${isOrder ? "is-order" : ""} ${isWorkflow ? "is-workflow" : ""}`}>
      <header className="execution-header">
        <h1><span aria-hidden="true">{view.icon}</span> {title}</h1>
        <Reasoning t={t} api={api} pk={pk} />
      </header>
      {!connected && <p className="notice" role="status">{t.reconnecting}</p>}
      {error && <p className="error" role="alert">{error}</p>}
      <div className="panes">
        <Chat t={t} api={api} view={view} state={state} dispatch={dispatch} />
        {isWorkflow && <WorkflowSteps t={t} api={api} pk={pk} tick={state.workflowTick} />}
        {isOrder ? (
          <OrderPanel t={t} order={state.order} ticket={state.ticket} />
        ) : (
          <DocumentPanel t={t} api={api} view={view} state={state}
            onVersion={(version) => dispatch(["version", version])} />
        )}
      </div>
    </section>
  );
}
