// A task's start page: its form (typed inputs, validation messages by field) or a first chat
// message. Nothing is created until the user starts: opening a task makes no execution.
import { useRef, useState, type FormEvent } from "react";
import { ApiError, type Api } from "../api";
import { navigate } from "../App";
import type { Texts } from "../i18n";
import type { JsonInput, UserTask } from "./Catalogue";

const MEDIA = new Set(["image", "multiple_images", "audio_file", "video", "file"]);

export function validateForm(inputs: JsonInput[], values: Record<string, string>, t: Texts,
  files: Record<string, File> = {}): Record<string, string> {
  const errors: Record<string, string> = {};
  for (const input of inputs) {
    const value = (values[input.input_name] ?? "").trim();
    if (MEDIA.has(input.type)) {
      if (!input.optional && !files[input.input_name]) errors[input.input_name] = t.required;
    } else if (!value && !input.optional) errors[input.input_name] = t.required;
    else if (value && input.type === "drop_down_list"
      && !(input.possible_values ?? []).some((option) => option.value === value)) {
      errors[input.input_name] = t.chooseOne;
    }
  }
  return errors;
}

export function StartTask({ t, api, task }: { t: Texts; api: Api; task: UserTask }) {
  // A workflow takes files (a recording, a transcript); other tasks leave their media inputs out.
  const inputs = task.json_input.filter((input) => task.type === "workflow" || !MEDIA.has(input.type));
  const [files, setFiles] = useState<Record<string, File>>({});
  const [values, setValues] = useState<Record<string, string>>({});
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [error, setError] = useState("");
  const [first, setFirst] = useState("");
  const [busy, setBusy] = useState(false);
  const created = useRef<{ user_task_execution_pk: number; session_id: string } | null>(null);
  const isOrder = task.type === "order";
  const isWorkflow = task.type === "workflow";

  // One execution per start attempt of this page: a refused start reuses it, never makes another.
  const execution = async () => {
    created.current ??= await api.call("PUT", "/user_task_execution", { user_task_pk: task.user_task_pk,
      platform: "webapp" });
    return created.current!;
  };

  const fail = (exc: unknown) => {
    if (exc instanceof ApiError && exc.field?.startsWith("inputs.")) {
      setErrors({ [exc.field.slice("inputs.".length)]: exc.friendly });
    } else {
      setError(exc instanceof ApiError ? exc.friendly : t.errServer);
    }
  };

  const startFromForm = async (event: FormEvent) => {
    event.preventDefault();
    setError("");
    const found = isOrder ? {} : validateForm(inputs, values, t, files);
    setErrors(found);
    if (Object.keys(found).length) {
      document.getElementById(`input-${Object.keys(found)[0]}`)?.focus();
      return;
    }
    setBusy(true);
    try {
      const { user_task_execution_pk: pk } = await execution();
      if (Object.keys(files).length) {
        await api.upload("/user_task_execution_run", { user_task_execution_pk: pk, inputs: values }, files);
      } else {
        await api.call("POST", "/user_task_execution_run", { user_task_execution_pk: pk,
          ...(isOrder ? {} : { inputs: values }) });
      }
      navigate(`/execution/${pk}`);
    } catch (exc) {
      fail(exc);
    } finally {
      setBusy(false);
    }
  };

  const startFromChat = async (event: FormEvent) => {
    event.preventDefault();
    if (!first.trim()) return;
    setError("");
    setBusy(true);
    try {
      const { user_task_execution_pk: pk, session_id } = await execution();
      await api.call("PUT", "/user_message", { session_id, user_task_execution_pk: pk, text: first,
        message_id: crypto.randomUUID() });
      navigate(`/execution/${pk}`);
    } catch (exc) {
      fail(exc);
    } finally {
      setBusy(false);
    }
  };

  return (
    <section className="start">
      <h1><span aria-hidden="true">{task.icon}</span> {task.name}</h1>
      <p>{task.description}</p>
      <form onSubmit={startFromForm} noValidate aria-label={task.name}>
        {!isOrder && inputs.map((input) => (
          <div className="field" key={input.input_name}>
            <label htmlFor={`input-${input.input_name}`}>{input.description_for_user}</label>
            {MEDIA.has(input.type) ? (
              <input type="file" id={`input-${input.input_name}`} aria-invalid={Boolean(errors[input.input_name])}
                aria-describedby={errors[input.input_name] ? `error-${input.input_name}` : undefined}
                onChange={(e) => {
                  const file = e.target.files?.[0];
                  const { [input.input_name]: _dropped, ...others } = files;
                  setFiles(file ? { ...others, [input.input_name]: file } : others);
                }} />
            ) : input.type === "drop_down_list" ? (
              <select id={`input-${input.input_name}`} value={values[input.input_name] ?? ""}
                aria-invalid={Boolean(errors[input.input_name])}
                aria-describedby={errors[input.input_name] ? `error-${input.input_name}` : undefined}
                onChange={(e) => setValues({ ...values, [input.input_name]: e.target.value })}>
                <option value="">—</option>
                {(input.possible_values ?? []).map((option) => (
                  <option key={option.value} value={option.value}>{option.displayed_text}</option>
                ))}
              </select>
            ) : (
              <textarea id={`input-${input.input_name}`} placeholder={input.placeholder ?? ""}
                rows={input.type === "text_area" ? 4 : 1} value={values[input.input_name] ?? ""}
                aria-invalid={Boolean(errors[input.input_name])}
                aria-describedby={errors[input.input_name] ? `error-${input.input_name}` : undefined}
                onChange={(e) => setValues({ ...values, [input.input_name]: e.target.value })} />
            )}
            {errors[input.input_name] && (
              <p className="field-error" id={`error-${input.input_name}`}>{errors[input.input_name]}</p>
            )}
          </div>
        ))}
        <button type="submit" disabled={busy}>{t.start}</button>
      </form>
      {!isOrder && !isWorkflow && (
        <form onSubmit={startFromChat} className="first-message">
          <label htmlFor="first-message">{t.orStartChat}</label>
          <div className="row">
            <input id="first-message" value={first} placeholder={t.firstMessage}
              onChange={(e) => setFirst(e.target.value)} />
            <button type="submit" disabled={busy || !first.trim()}>{t.send}</button>
          </div>
        </form>
      )}
      {error && <p className="error" role="alert">{error}</p>}
    </section>
  );
}
