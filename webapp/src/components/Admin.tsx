// Admin page (admin secret): upload a task spec, list the tasks, usage and cost per day and task.
import { useEffect, useState } from "react";
import { ApiError, makeApi } from "../api";
import type { Texts } from "../i18n";

interface UsageGroup { [key: string]: any; calls: number; total_tokens: number; cost: number }

function Bars({ groups, by }: { groups: UsageGroup[]; by: string }) {
  const max = Math.max(1e-9, ...groups.map((g) => g.cost || g.total_tokens / 1e6));
  return (
    <table className="usage">
      <thead><tr><th>{by}</th><th>calls</th><th>tokens</th><th>cost</th><th aria-hidden="true"></th></tr></thead>
      <tbody>
        {groups.map((g) => (
          <tr key={String(g[by])}>
            <td>{String(g[by] ?? "—")}</td><td>{g.calls}</td><td>{g.total_tokens}</td><td>{g.cost.toFixed(4)}</td>
            <td aria-hidden="true"><span className="bar" style={{ width: `${(100 * (g.cost || g.total_tokens / 1e6)) / max}%` }} /></td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

export function Admin({ t }: { t: Texts }) {
  const [secret, setSecret] = useState(() => sessionStorage.getItem("mojodex_admin") ?? "");
  const [entered, setEntered] = useState(secret);
  const [tasks, setTasks] = useState<any[]>([]);
  const [usage, setUsage] = useState<Record<string, UsageGroup[]>>({});
  const [spec, setSpec] = useState("");
  const [kind, setKind] = useState<"task" | "menu">("task");
  const [issues, setIssues] = useState<{ path: string; rule: string }[]>([]);
  const [message, setMessage] = useState("");
  const api = makeApi(() => secret, () => t, () => undefined);

  const load = () => {
    api.call("GET", "/task").then((answer) => setTasks(answer.tasks)).catch((exc) => setMessage(exc.friendly));
    for (const by of ["day", "task"]) {
      api.call("GET", `/usage?group_by=${by}`).then((answer) => setUsage((u) => ({ ...u, [by]: answer.groups ?? [] })))
        .catch(() => undefined);
    }
  };
  useEffect(() => { if (secret) load(); }, [secret]); // eslint-disable-line react-hooks/exhaustive-deps

  const upload = async () => {
    setIssues([]);
    setMessage("");
    let data: unknown;
    try {
      data = JSON.parse(spec);
    } catch {
      setIssues([{ path: "<file>", rule: "not valid JSON" }]);
      return;
    }
    try {
      let answer;
      if (kind === "menu") {
        answer = await api.call("PUT", "/menu", data);
        setMessage(`✓ ${answer.menu_id}`);
      } else {
        try {
          answer = await api.call("PUT", "/task", data);
        } catch (exc) {
          if (exc instanceof ApiError && exc.status === 409) answer = await api.call("POST", "/task", data);
          else throw exc;
        }
        setMessage(`✓ ${answer.name_for_system}`);
      }
      load();
    } catch (exc) {
      if (exc instanceof ApiError && Array.isArray(exc.extra.errors)) setIssues(exc.extra.errors as any);
      else if (exc instanceof ApiError && exc.field) setIssues([{ path: exc.field, rule: exc.raw }]);
      else setMessage(exc instanceof ApiError ? exc.friendly : t.errServer);
    }
  };

  if (!secret) {
    return (
      <main className="login">
        <h1>{t.admin}</h1>
        <form onSubmit={(e) => { e.preventDefault(); sessionStorage.setItem("mojodex_admin", entered); setSecret(entered); }}>
          <label>{t.adminSecret}<input type="password" value={entered} onChange={(e) => setEntered(e.target.value)} /></label>
          <button type="submit">{t.signIn}</button>
        </form>
      </main>
    );
  }
  return (
    <main className="admin">
      <header className="row"><h1>{t.admin}</h1>
        <button onClick={() => { sessionStorage.removeItem("mojodex_admin"); setSecret(""); }}>{t.signOut}</button></header>
      <section>
        <h2>{t.uploadSpec}</h2>
        <fieldset className="row">
          <legend className="sr-only">{t.uploadKind}</legend>
          <label><input type="radio" name="kind" checked={kind === "task"} onChange={() => setKind("task")} /> {t.kindTask}</label>
          <label><input type="radio" name="kind" checked={kind === "menu"} onChange={() => setKind("menu")} /> {t.kindMenu}</label>
        </fieldset>
        <input type="file" accept="application/json,.json" aria-label={t.uploadSpec}
          onChange={async (e) => setSpec((await e.target.files?.[0]?.text()) ?? "")} />
        <label className="sr-only" htmlFor="spec-text">{t.uploadSpec}</label>
        <textarea id="spec-text" rows={10} value={spec} onChange={(e) => setSpec(e.target.value)} />
        <button onClick={upload} disabled={!spec.trim()}>{t.upload}</button>
        {message && <p role="status">{message}</p>}
        {issues.length > 0 && (
          <table className="spec-errors" role="alert">
            <tbody>{issues.map((issue, i) => <tr key={i}><th scope="row"><code>{issue.path}</code></th><td>{issue.rule}</td></tr>)}</tbody>
          </table>
        )}
      </section>
      <section>
        <h2>{t.tasks}</h2>
        <ul className="admin-tasks">{tasks.map((task) => (
          <li key={task.task_pk}>{task.icon} <code>{task.name_for_system}</code> ({task.type}; {task.languages.join(", ")})</li>
        ))}</ul>
      </section>
      <section>
        <h2>{t.usage}</h2>
        {usage.day && <Bars groups={usage.day} by="day" />}
        {usage.task && <Bars groups={usage.task} by="task" />}
      </section>
    </main>
  );
}
