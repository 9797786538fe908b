import { useState, type FormEvent } from "react";
import { ApiError, makeApi } from "../api";
import type { Texts } from "../i18n";

export function Login({ t, onSignedIn }: { t: Texts; onSignedIn: (token: string) => void }) {
  const [mode, setMode] = useState<"password" | "token">("password");
  const [email, setEmail] = useState("");
  const [password, setPassword] = useState("");
  const [token, setToken] = useState("");
  const [error, setError] = useState("");
  const [busy, setBusy] = useState(false);

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setError("");
    setBusy(true);
    try {
      if (mode === "password") {
        const api = makeApi(() => "", () => t, () => undefined);
        const answer = await api.call<{ token: string }>("POST", "/login", { email, password });
        onSignedIn(answer.token);
      } else {
        const api = makeApi(() => token.trim(), () => t, () => undefined);
        await api.call("GET", "/user");
        onSignedIn(token.trim());
      }
    } catch (exc) {
      setError(exc instanceof ApiError ? exc.friendly : t.errServer);
    } finally {
      setBusy(false);
    }
  };

  return (
    <main className="login">
      <h1>{t.appName}</h1>
      <form onSubmit={submit} aria-label={t.signIn}>
        {mode === "password" ? (
          <>
            <label>{t.email}
              <input type="email" name="email" autoComplete="username" required value={email}
                onChange={(e) => setEmail(e.target.value)} />
            </label>
            <label>{t.password}
              <input type="password" name="password" autoComplete="current-password" required value={password}
                onChange={(e) => setPassword(e.target.value)} />
            </label>
          </>
        ) : (
          <label>{t.apiToken}
            <input type="password" name="token" autoComplete="off" required value={token}
              onChange={(e) => setToken(e.target.value)} />
          </label>
        )}
        <button type="submit" disabled={busy}>{t.signIn}</button>
        {error && <p className="error" role="alert">{error}</p>}
      </form>
      <button className="link" onClick={() => setMode(mode === "password" ? "token" : "password")}>
        {mode === "password" ? t.useToken : t.usePassword}
      </button>
      <p className="hint">{t.signInHint}</p>
    </main>
  );
}
