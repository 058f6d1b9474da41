import { defineConfig } from "vite";

// The console's production build, served by the gateway at `/` (console/dist).
export default defineConfig({
  root: import.meta.dirname,
  base: "/",
  build: { outDir: "dist", emptyOutDir: true, target: "es2022" },
  server: { fs: { allow: [".."] } },
});
