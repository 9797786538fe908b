// A workflow's steps (GET /user_workflow_step_execution, reloaded on each step event): status,
// results, and the user's controls: validate, reject (then the review chat), edit a result,
// relaunch a failed step, restart from a step.
import { useEffect, useState } from "react";
import { ApiError, type Api } from "../api";
import type { Texts } from "../i18n";

interface StepExecution {
  user_workflow_step_execution_pk: number;
  step_name_for_system: string;
  rank: number;
  parameter: unknown;
  status: string;
  validated: boolean | null;
  result: Record<string, unknown>[] | null;
  error: string | null;
  review_chat_enabled: boolean | null;
}

function label(name: string): string {
  return name.replace(/_/g, " ");
}

function StepResult({ result }: { result: Record<string, unknown>[] }) {
  return (
    <ul className="step-result">
      {result.map((item, i) => <li key={i}>{Object.values(item).map(String).join(" — ")}</li>)}
    </ul>
  );
}

export function WorkflowSteps({ t, api, pk, tick }: { t: Texts; api: Api; pk: number; tick: number }) {
  const [rows, setRows] = useState<StepExecution[]>([]);
  const [error, setError] = useState("");
  const [notice, setNotice] = useState("");
  const [editing, setEditing] = useState<number | null>(null);
  const [draft, setDraft] = useState<Record<string, unknown>[]>([]);

  const load = () => api.call("GET", `/user_workflow_step_execution?user_task_execution_pk=${pk}`)
    .then((answer) => setRows(answer.step_executions ?? [])).catch((exc) => setError(exc.friendly));
  useEffect(() => { void load(); }, [pk, tick]); // eslint-disable-line react-hooks/exhaustive-deps
  useEffect(() => setNotice(""), [tick]); // a step moved on: the hint about it is old news

  const act = async (method: string, path: string, body: Record<string, unknown>, done = "") => {
    setError("");
    setNotice("");
    try {
      await api.call(method, path, body);
      setNotice(done);
      setEditing(null);
      await load();
    } catch (exc) {
      setError(exc instanceof ApiError ? exc.friendly : t.errServer);
    }
  };

  return (
    <aside className="workflow" aria-label={t.steps}>
      <h2>{t.steps}</h2>
      {rows.length === 0 && <p>{t.loading}</p>}
      <ol>
        {rows.map((row) => {
          const stepPk = row.user_workflow_step_execution_pk;
          const awaiting = row.status === "done" && row.validated === null;
          return (
            <li key={stepPk} className={`step step-${row.status}`} data-testid="workflow-step">
              <div className="row">
                <strong>{row.rank}. {label(row.step_name_for_system)}</strong>
                {typeof row.parameter === "string" && <span className="step-parameter">{row.parameter}</span>}
                <span className="step-status">{row.validated ? `${row.status}, ${t.validated}` : row.status}</span>
              </div>
              {row.error && <p className="error">{row.error}</p>}
              {editing === stepPk ? (
                <form onSubmit={(e) => {
                  e.preventDefault();
                  void act("PUT", "/user_workflow_step_execution_result", { user_workflow_step_execution_pk: stepPk,
                    result: draft });
                }}>
                  {draft.map((item, i) => Object.entries(item).map(([key, value]) => (
                    <label key={`${i}-${key}`}>{label(key)} {i + 1}
                      <textarea rows={2} value={String(value)} onChange={(e) => setDraft(draft.map((d, j) =>
                        (j === i ? { ...d, [key]: e.target.value } : d)))} />
                    </label>
                  )))}
                  <div className="row">
                    <button type="submit">{t.save}</button>
                    <button type="button" onClick={() => setEditing(null)}>{t.cancel}</button>
                  </div>
                </form>
              ) : row.result && <StepResult result={row.result} />}
              <div className="row">
                {awaiting && (
                  <>
                    <button onClick={() => act("POST", "/user_workflow_step_execution",
                      { user_workflow_step_execution_pk: stepPk, validated: true })}>{t.validate}</button>
                    <button onClick={() => act("POST", "/user_workflow_step_execution",
                      { user_workflow_step_execution_pk: stepPk, validated: false },
                      row.review_chat_enabled ? t.rejectWhy : "")}>{t.reject}</button>
                  </>
                )}
                {row.status === "failed" && (
                  <button onClick={() => act("PUT", "/user_workflow_step_execution",
                    { user_workflow_step_execution_pk: stepPk })}>{t.relaunch}</button>
                )}
                {row.status === "done" && row.result && editing !== stepPk && (
                  <button onClick={() => { setDraft(row.result ?? []); setEditing(stepPk); }}>{t.edit}</button>
                )}
                {row.status !== "running" && (
                  <button onClick={() => act("POST", "/restart_user_workflow_execution",
                    { user_task_execution_pk: pk, from_rank: row.rank })}>{t.restartHere}</button>
                )}
              </div>
            </li>
          );
        })}
      </ol>
      {notice && <p className="notice" role="status">{notice}</p>}
      {error && <p className="error" role="alert">{error}</p>}
    </aside>
  );
}
