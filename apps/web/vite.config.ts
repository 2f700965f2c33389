// Builds the browser client into dist/ (served by @dsh/surfaces/web). Preact via esbuild's automatic JSX.
import { defineConfig } from 'vite'

export default defineConfig({
  root: import.meta.dirname,
  base: '/',
  esbuild: { jsx: 'automatic', jsxImportSource: 'preact' },
  build: { outDir: 'dist', emptyOutDir: true, target: 'es2022', sourcemap: false },
})
