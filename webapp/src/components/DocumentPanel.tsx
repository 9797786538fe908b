// The produced text: title, versions (the one streaming is its own, never the previous one),
// manual edit, text edit actions, copy, download, and predefined follow-up tasks.
import { useEffect, useState } from "react";
import { ApiError, type Api } from "../api";
import { navigate } from "../App";
import type { Texts } from "../i18n";
import type { SessionState } from "../session";
import type { ExecutionView } from "./Execution";
import { Markdown } from "./Markdown";

export function DocumentPanel({ t, api, view, state, onVersion }: {
  t: Texts; api: Api; view: ExecutionView; state: SessionState; onVersion: (version: Record<string, any>) => void;
}) {
  const doc = state.doc;
  const [editing, setEditing] = useState(false);
  const [draftTitle, setDraftTitle] = useState("");
  const [draftText, setDraftText] = useState("");
  const [error, setError] = useState("");
  // The latest version known when the editor opened: the edit is based on it, so a version made
  // meanwhile (the assistant, another tab) is not overwritten blindly (409 below).
  const [base, setBase] = useState(0);
  const [copied, setCopied] = useState(false);
  const streaming = doc.streaming && doc.shown === doc.streaming.index ? doc.streaming : null;
  const version = doc.versions[doc.shown];
  const total = Math.max(doc.count, doc.streaming?.index ?? 0);

  useEffect(() => {
    // A version not loaded yet (navigation after a reload): fetch it.
    if (doc.shown > 0 && !version && !streaming && doc.producedTextPk) {
      api.call("GET", `/produced_text?produced_text_pk=${doc.producedTextPk}&produced_text_version_index=${doc.shown}`)
        .then(onVersion).catch((exc) => setError(exc.friendly));
    }
  }, [doc.shown, version, streaming, doc.producedTextPk]); // eslint-disable-line react-hooks/exhaustive-deps

  if (total === 0) return null;
  const show = (index: number) => {
    if (index < 1 || index > doc.count) return;
    if (doc.versions[index]) onVersion({ ...doc.versions[index], produced_text_version_index: index,
      produced_text_version_pk: doc.versions[index].pk, produced_text_title: doc.versions[index].title,
      produced_text: doc.versions[index].text, produced_text_version_count: doc.count });
    else api.call("GET", `/produced_text?produced_text_pk=${doc.producedTextPk}&produced_text_version_index=${index}`)
      .then(onVersion).catch((exc) => setError(exc.friendly));
  };

  const title = streaming ? streaming.title : version?.title ?? "";
  const text = streaming ? streaming.text : version?.text ?? "";
  const fail = (exc: unknown) => setError(exc instanceof ApiError ? exc.friendly : t.errServer);

  const save = async () => {
    try {
      onVersion(await api.call("POST", "/produced_text", { produced_text_pk: doc.producedTextPk,
        title: draftTitle, production: draftText, base_produced_text_version_index: base }));
      setEditing(false);
      setError("");
    } catch (exc) {
      const latest = exc instanceof ApiError && exc.status === 409 ? exc.extra.latest_produced_text_version_index : null;
      if (typeof latest === "number") {
        // A newer version exists: keep the user's text in the editor, say so; saving again keeps it as the newest.
        // The newer version is fetched (the panel shows it once the editor is closed).
        setBase(latest);
        setError(t.errDocChanged.replaceAll("{n}", String(latest)));
        api.call("GET", `/produced_text?produced_text_pk=${doc.producedTextPk}&produced_text_version_index=${latest}`)
          .then(onVersion).catch(() => undefined);
      } else fail(exc);
    }
  };

  const runEdit = async (actionPk: number) => {
    if (!version?.pk) return;
    const messageId = crypto.randomUUID();
    const body = { produced_text_version_pk: version.pk, text_edit_action_pk: actionPk };
    sessionStorage.setItem(`edit-${messageId}`, JSON.stringify(body)); // for a retry
    try {
      await api.call("POST", "/text_edit_action", { ...body, message_id: messageId });
    } catch (exc) {
      fail(exc);
    }
  };

  const followUp = async (action: NonNullable<ExecutionView["actions"]>[number]) => {
    try {
      const child = await api.call("PUT", "/user_task_execution", { user_task_pk: action.user_task_pk,
        user_task_execution_fk: view.user_task_execution_pk, platform: "webapp" });
      await api.call("PUT", "/user_message", { session_id: child.session_id,
        user_task_execution_pk: child.user_task_execution_pk, message_id: crypto.randomUUID(),
        text: `${action.message_prefix ?? action.name}${title ? ` ${title}` : ""}`.trim() });
      navigate(`/execution/${child.user_task_execution_pk}`);
    } catch (exc) {
      fail(exc);
    }
  };

  const copy = async () => {
    await navigator.clipboard?.writeText(`# ${title}\n\n${text}`).catch(() => undefined);
    setCopied(true);
    setTimeout(() => setCopied(false), 1500);
  };
  const download = () => {
    const url = URL.createObjectURL(new Blob([`# ${title}\n\n${text}\n`], { type: "text/markdown" }));
    const link = Object.assign(document.createElement("a"), { href: url,
      download: `${(title || "document").replace(/[^\w-]+/g, "_")}.md` });
    link.click();
    URL.revokeObjectURL(url);
  };

  return (
    <aside className="document" aria-label={t.document}>
      <div className="versions">
        <button onClick={() => show(doc.shown - 1)} disabled={doc.shown <= 1 || Boolean(streaming)}
          aria-label={t.previous}>‹</button>
        <span className="version-label" data-testid="version-label">
          {t.version} {doc.shown} {t.of} {total}{streaming ? ` (${t.writing})` : ""}
        </span>
        <button onClick={() => show(doc.shown + 1)} disabled={doc.shown >= doc.count || Boolean(streaming)}
          aria-label={t.next}>›</button>
      </div>
      {editing ? (
        <div className="editor">
          <label>{t.document}<input value={draftTitle} onChange={(e) => setDraftTitle(e.target.value)} /></label>
          <label className="sr-only" htmlFor="doc-editor">{t.edit}</label>
          <textarea id="doc-editor" rows={14} value={draftText} onChange={(e) => setDraftText(e.target.value)} />
          <div className="row">
            <button onClick={save} disabled={!draftText.trim()}>{t.save}</button>
            <button onClick={() => { setEditing(false); setError(""); }}>{t.cancel}</button>
          </div>
        </div>
      ) : (
        <article className="doc-body">
          <h2 className="doc-title">{title}</h2>
          <Markdown text={text} />
        </article>
      )}
      {!editing && !streaming && version && (
        <div className="doc-tools">
          <div className="row">
            <button onClick={() => { setDraftTitle(title); setDraftText(text); setBase(doc.count); setError("");
              setEditing(true); }}>{t.edit}</button>
            <button onClick={copy}>{copied ? t.copied : t.copy}</button>
            <button onClick={download}>{t.download}</button>
          </div>
          {(view.text_edit_actions ?? []).length > 0 && (
            <div className="edit-actions" role="group" aria-label={t.editActions}>
              <h3>{t.editActions}</h3>
              {view.text_edit_actions!.map((action) => (
                <button key={action.text_edit_action_pk} title={action.description} disabled={state.busy}
                  onClick={() => runEdit(action.text_edit_action_pk)}>
                  {action.emoji} {action.name}
                </button>
              ))}
            </div>
          )}
          {(view.actions ?? []).length > 0 && (
            <div className="follow-ups" role="group" aria-label={t.followUps}>
              <h3>{t.followUps}</h3>
              {view.actions!.map((action) => (
                <button key={action.user_task_pk} onClick={() => followUp(action)}>
                  {action.button_text ?? action.name}
                </button>
              ))}
            </div>
          )}
        </div>
      )}
      {error && <p className="error" role="alert">{error}</p>}
    </aside>
  );
}
