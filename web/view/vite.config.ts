// Builds the run view into ONE self-contained HTML file (inline script and style, nothing fetched),
// written straight to where the server serves it from.
import { resolve } from "node:path";
import { defineConfig } from "vite";
import { viteSingleFile } from "vite-plugin-singlefile";

export default defineConfig({
  plugins: [viteSingleFile()],
  build: {
    outDir: resolve(__dirname, "../../research_mcp/server/view"),
    emptyOutDir: false,
    rollupOptions: { input: resolve(__dirname, "run.html") },
    target: "es2022",
    reportCompressedSize: false,
    modulePreload: { polyfill: false },
  },
});
