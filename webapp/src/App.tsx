// The shell: who is signed in, the language, the route (#/...), and the one Socket.IO connection.
import { useCallback, useEffect, useMemo, useState } from "react";
import { io, type Socket } from "socket.io-client";
import { makeApi } from "./api";
import { texts } from "./i18n";
import { Admin } from "./components/Admin";
import { Catalogue, type UserTask } from "./components/Catalogue";
import { Execution } from "./components/Execution";
import { History } from "./components/History";
import { Login } from "./components/Login";
import { StartTask } from "./components/StartTask";

export interface Profile {
  name: string;
  email: string;
  language_code: string;
}

function useHashRoute(): string[] {
  const [hash, setHash] = useState(window.location.hash);
  useEffect(() => {
    const onChange = () => setHash(window.location.hash);
    window.addEventListener("hashchange", onChange);
    return () => window.removeEventListener("hashchange", onChange);
  }, []);
  return hash.replace(/^#\/?/, "").split("/").filter(Boolean);
}

export function navigate(path: string): void {
  window.location.hash = path;
}

export function App() {
  const [token, setToken] = useState(() => localStorage.getItem("mojodex_token") ?? "");
  const [profile, setProfile] = useState<Profile | null>(null);
  const [tasks, setTasks] = useState<UserTask[]>([]);
  const [socket, setSocket] = useState<Socket | null>(null);
  const [menuOpen, setMenuOpen] = useState(false);
  const t = texts(profile?.language_code);
  const route = useHashRoute();

  const signOut = useCallback(() => {
    localStorage.removeItem("mojodex_token");
    setToken("");
    setProfile(null);
    setTasks([]);
  }, []);
  const api = useMemo(() => makeApi(() => token, () => t, signOut), [token, t, signOut]);

  useEffect(() => {
    if (!token) return;
    let live = true;
    Promise.all([api.call<Profile>("GET", "/user"), api.call("GET", "/user_task?platform=webapp")])
      .then(([me, list]) => {
        if (!live) return;
        setProfile(me);
        setTasks(list.user_tasks);
        document.documentElement.lang = me.language_code;
      })
      .catch(() => live && signOut());
    return () => {
      live = false;
    };
  }, [token]); // eslint-disable-line react-hooks/exhaustive-deps

  useEffect(() => {
    if (!token) return;
    const s = io({ auth: { token }, transports: ["websocket"] });
    (window as any).mojodexSocket = s; // for debugging in the browser console (and the browser tests)
    setSocket(s);
    return () => {
      s.close();
      setSocket(null);
    };
  }, [token]);

  const onSignedIn = (newToken: string) => {
    localStorage.setItem("mojodex_token", newToken);
    setToken(newToken);
  };

  const doSignOut = async () => {
    await api.call("POST", "/logout").catch(() => undefined);
    signOut();
    navigate("/");
  };

  if (route[0] === "admin") return <Admin t={t} />;
  if (!token || !profile) {
    return token ? <p className="loading">{t.loading}</p> : <Login t={t} onSignedIn={onSignedIn} />;
  }

  let page;
  if (route[0] === "task" && route[1]) {
    const task = tasks.find((x) => String(x.user_task_pk) === route[1]);
    page = task ? <StartTask key={route[1]} t={t} api={api} task={task} /> : <p role="alert">{t.notFound}</p>;
  } else if (route[0] === "execution" && route[1]) {
    page = <Execution key={route[1]} t={t} api={api} socket={socket} pk={Number(route[1])} tasks={tasks} />;
  } else if (route[0] === "history") {
    page = <History t={t} api={api} />;
  } else {
    page = <Catalogue t={t} tasks={tasks} />;
  }

  return (
    <div className="shell">
      <header className="topbar">
        <a href="#/" className="brand">{t.appName}</a>
        <button className="menu-toggle" aria-expanded={menuOpen} aria-controls="main-nav"
          onClick={() => setMenuOpen(!menuOpen)}>☰<span className="sr-only">Menu</span></button>
        <nav id="main-nav" className={menuOpen ? "open" : ""} onClick={() => setMenuOpen(false)}>
          <a href="#/">{t.newTask}</a>
          <a href="#/history">{t.history}</a>
          <span className="who">{profile.name}</span>
          <button onClick={doSignOut}>{t.signOut}</button>
        </nav>
      </header>
      <main>{page}</main>
    </div>
  );
}
