// The on-call page's build: one UMD file, plugins/kafka_archive/ui/static/oncall-app.js, that
// Airflow's UI imports (its react_apps contract: the file sets globalThis.AirflowPlugin to the
// page's component). React, React Router, Chakra UI and Emotion are not in it: they are the
// host's own, which Airflow 3.3's UI puts on globalThis (React, ReactDOM, ReactJSXRuntime,
// ReactRouterDOM, ChakraUI, EmotionReact), so the page renders with the host's React and
// the host's Chakra theme (light/dark mode, fonts, spacing) and the bundle stays small.
import { resolve } from "node:path";
import { defineConfig } from "vite";

const HOST_GLOBALS = {
  react: "React",
  "react-dom": "ReactDOM",
  "react/jsx-runtime": "ReactJSXRuntime",
  "react-router-dom": "ReactRouterDOM",
  "@chakra-ui/react": "ChakraUI",
  "@emotion/react": "EmotionReact",
};

export default defineConfig({
  build: {
    outDir: resolve(import.meta.dirname, "../plugins/kafka_archive/ui/static"),
    emptyOutDir: false,
    minify: false, // readable in the browser's debugger and in review; ~60 KB either way
    sourcemap: false,
    lib: {
      entry: resolve(import.meta.dirname, "src/main.jsx"),
      formats: ["umd"],
      name: "AirflowPlugin",
      fileName: () => "oncall-app.js",
    },
    rollupOptions: {
      external: Object.keys(HOST_GLOBALS),
      output: { globals: HOST_GLOBALS },
    },
  },
  esbuild: { jsx: "automatic", jsxImportSource: "react" },
  define: { "process.env.NODE_ENV": JSON.stringify("production") },
});
