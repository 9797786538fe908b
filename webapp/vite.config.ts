import react from "@vitejs/plugin-react";
import { defineConfig } from "vite";

// `npm run dev` proxies the API to a backend started by `make run` (port 5001).
const backend = process.env.MOJODEX_BACKEND ?? "http://127.0.0.1:5001";
const apiPaths = ["/login", "/logout", "/user", "/user_task", "/user_task_execution", "/user_task_execution_run",
  "/user_task_execution_stop", "/user_task_execution_title", "/user_message", "/message", "/produced_text",
  "/user_task_execution_produced_text", "/text_edit_action", "/task_tool_execution", "/order", "/task", "/usage",
  "/user_workflow_step_execution", "/user_workflow_step_execution_result", "/restart_user_workflow_execution",
  "/health"];

export default defineConfig({
  plugins: [react()],
  build: { outDir: "dist", emptyOutDir: true, sourcemap: false },
  server: {
    proxy: {
      ...Object.fromEntries(apiPaths.map((p) => [p, backend])),
      "/socket.io": { target: backend, ws: true },
    },
  },
});
