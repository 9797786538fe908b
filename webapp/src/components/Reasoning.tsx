import { useState } from "react";
import type { Api } from "../api";
import type { Texts } from "../i18n";

export function Reasoning({ t, api, pk }: { t: Texts; api: Api; pk: number }) {
  const [entries, setEntries] = useState<Record<string, any>[] | null>(null);
  const [open, setOpen] = useState(false);
  const toggle = async () => {
    if (!open) {
      const answer = await api.call("GET", `/user_task_execution/reasoning?user_task_execution_pk=${pk}`)
        .catch(() => ({ reasoning: [] }));
      setEntries(answer.reasoning ?? []);
    }
    setOpen(!open);
  };
  return (
    <div className="reasoning">
      <button aria-expanded={open} onClick={toggle}>{open ? t.hideWhy : t.why}</button>
      {open && (
        <ol className="reasoning-list">
          {(entries ?? []).length === 0 && <li>{t.noReasoning}</li>}
          {(entries ?? []).map((entry, i) => (
            <li key={i}><strong>{String(entry.kind ?? entry.step ?? "")}</strong>{" "}
              {String(entry.text ?? entry.summary ?? entry.detail ?? JSON.stringify(entry))}</li>
          ))}
        </ol>
      )}
    </div>
  );
}
