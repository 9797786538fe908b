// Workflow steps, shown only when the server sends workflow_step_execution_* events.
import { useState } from "react";
import { ApiError, type Api } from "../api";
import type { Texts } from "../i18n";
import type { WorkflowStep } from "../session";

export function WorkflowSteps({ t, api, steps }: { t: Texts; api: Api; steps: WorkflowStep[] }) {
  const [error, setError] = useState("");
  const [rejecting, setRejecting] = useState<number | null>(null);
  const [why, setWhy] = useState("");
  const decide = async (pk: number, validated: boolean) => {
    setError("");
    try {
      await api.call("POST", "/user_workflow_step_execution", { user_workflow_step_execution_pk: pk, validated,
        ...(validated ? {} : { instruction: why }) });
      setRejecting(null);
      setWhy("");
    } catch (exc) {
      setError(exc instanceof ApiError ? exc.friendly : t.errServer);
    }
  };
  return (
    <aside className="workflow" aria-label={t.steps}>
      <h2>{t.steps}</h2>
      <ol>
        {steps.map((step) => (
          <li key={step.pk} className={`step step-${step.status}`}>
            <strong>{step.name}</strong> <span className="step-status">{step.status}</span>
            {step.result && <pre>{step.result}</pre>}
            {step.status === "done" && (
              <div className="row">
                <button onClick={() => decide(step.pk, true)}>{t.validate}</button>
                <button onClick={() => setRejecting(step.pk)}>{t.reject}</button>
              </div>
            )}
            {rejecting === step.pk && (
              <form onSubmit={(e) => { e.preventDefault(); void decide(step.pk, false); }}>
                <label>{t.rejectWhy}<input value={why} onChange={(e) => setWhy(e.target.value)} /></label>
                <button type="submit" disabled={!why.trim()}>{t.reject}</button>
              </form>
            )}
          </li>
        ))}
      </ol>
      {error && <p className="error" role="alert">{error}</p>}
    </aside>
  );
}
