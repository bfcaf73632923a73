import { defineConfig } from "vitest/config";

// The build goes into ../api/webapp, which the api package embeds: fixed
// file names (no content hashes: the server sends ETags), no source maps,
// so that a rebuild of the same sources is the same bytes
// (.ci/web-check compares them).
export default defineConfig({
  base: "/",
  build: {
    outDir: "../api/webapp",
    emptyOutDir: true,
    assetsDir: "assets",
    sourcemap: false,
    modulePreload: false,
    reportCompressedSize: false,
    rollupOptions: {
      output: {
        entryFileNames: "assets/app.js",
        chunkFileNames: "assets/[name].js",
        assetFileNames: (a) => (a.names.some((n) => n.endsWith(".css")) ? "assets/app.css" : "assets/[name][extname]"),
      },
    },
  },
  test: {
    include: ["test/**/*.test.ts"],
    environment: "node",
  },
});
