// Rows of cells as aligned text lines (a header row first, the last column left ragged), as the
// command line's tables print them: `dsh sessions`, `dsh agents`, `/agents`, `dsh worktrees`.

export function alignColumns(rows: readonly (readonly string[])[]): string[] {
  const widths = rows[0]?.map((_, column) => Math.max(...rows.map((row) => (row[column] ?? '').length))) ?? []
  return rows.map((row) =>
    row
      .map((cell, column) => (column === row.length - 1 ? cell : cell.padEnd(widths[column] ?? 0)))
      .join('  ')
      .trimEnd(),
  )
}
