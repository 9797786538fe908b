// The user's executions, newest first: search, rename, delete, open.
import { useEffect, useState } from "react";
import { ApiError, type Api } from "../api";
import type { Texts } from "../i18n";
import { fold } from "./Catalogue";
import type { ExecutionView } from "./Execution";

interface Row extends ExecutionView {
  created_at: string | null;
}

export function History({ t, api }: { t: Texts; api: Api }) {
  const [rows, setRows] = useState<Row[] | null>(null);
  const [query, setQuery] = useState("");
  const [renaming, setRenaming] = useState<number | null>(null);
  const [name, setName] = useState("");
  const [error, setError] = useState("");
  const fail = (exc: unknown) => setError(exc instanceof ApiError ? exc.friendly : t.errServer);

  useEffect(() => {
    api.call("GET", "/user_task_execution?limit=100").then((page) => setRows(page.user_task_executions)).catch(fail);
  }, [api]); // eslint-disable-line react-hooks/exhaustive-deps

  const rename = async (pk: number) => {
    try {
      const answer = await api.call("POST", "/user_task_execution_title", { user_task_execution_pk: pk, title: name });
      setRows((rows ?? []).map((r) => (r.user_task_execution_pk === pk ? { ...r, title: answer.title } : r)));
      setRenaming(null);
    } catch (exc) {
      fail(exc);
    }
  };
  const remove = async (pk: number) => {
    if (!window.confirm(t.confirmDelete)) return;
    try {
      await api.call("DELETE", `/user_task_execution?user_task_execution_pk=${pk}`);
      setRows((rows ?? []).filter((r) => r.user_task_execution_pk !== pk));
    } catch (exc) {
      fail(exc);
    }
  };

  if (!rows) return error ? <p className="error" role="alert">{error}</p> : <p>{t.loading}</p>;
  const shown = rows.filter((r) => fold(`${r.title ?? ""} ${r.summary ?? ""} ${r.task_name}`).includes(fold(query)));
  return (
    <section className="history">
      <h1>{t.history}</h1>
      <label className="search">{t.search}
        <input type="search" value={query} onChange={(e) => setQuery(e.target.value)} />
      </label>
      {error && <p className="error" role="alert">{error}</p>}
      {rows.length === 0 && <p>{t.emptyHistory}</p>}
      <ul className="history-list">
        {shown.map((row) => (
          <li key={row.user_task_execution_pk} className="history-row">
            {renaming === row.user_task_execution_pk ? (
              <form onSubmit={(e) => { e.preventDefault(); void rename(row.user_task_execution_pk); }} className="row">
                <label className="sr-only" htmlFor={`rename-${row.user_task_execution_pk}`}>{t.rename}</label>
                <input id={`rename-${row.user_task_execution_pk}`} value={name} onChange={(e) => setName(e.target.value)} />
                <button type="submit" disabled={!name.trim()}>{t.save}</button>
                <button type="button" onClick={() => setRenaming(null)}>{t.cancel}</button>
              </form>
            ) : (
              <a href={`#/execution/${row.user_task_execution_pk}`} className="history-link">
                <span><span aria-hidden="true">{row.icon}</span>{" "}
                  <strong className="history-title">{row.title ?? t.untitled}</strong></span>
                <span className="history-task">{row.task_name}</span>
                <span className="history-date">{row.created_at ? new Date(row.created_at).toLocaleString() : ""}</span>
                {row.summary && <span className="history-summary">{row.summary}</span>}
              </a>
            )}
            <div className="row">
              <button onClick={() => { setRenaming(row.user_task_execution_pk); setName(row.title ?? ""); }}
                aria-label={`${t.rename}: ${row.title ?? t.untitled}`}>{t.rename}</button>
              <button onClick={() => remove(row.user_task_execution_pk)}
                aria-label={`${t.delete}: ${row.title ?? t.untitled}`}>{t.delete}</button>
            </div>
          </li>
        ))}
      </ul>
    </section>
  );
}
