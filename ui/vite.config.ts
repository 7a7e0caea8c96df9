import { defineConfig } from "vitest/config";
import preact from "@preact/preset-vite";

// The build lands inside the Python package (package data), so `pip install` users need no Node.
export default defineConfig({
  plugins: [preact()],
  base: "/",
  build: {
    outDir: process.env.UI_OUT_DIR ?? "../broker/management/ui/dist",
    emptyOutDir: true,
    chunkSizeWarningLimit: 3000,
  },
  test: { environment: "node", include: ["src/**/*.test.ts"] },
});
