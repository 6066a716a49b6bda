// Sorting of the report's tables: click a column head of a `table.sortable` to sort its rows by
// that column (numbers by the cells' data-value); click again to reverse.
document.addEventListener("DOMContentLoaded", () => {
  for (const table of document.querySelectorAll("table.sortable")) {
    table.querySelectorAll("th[data-sort]").forEach((th, index) => {
      th.tabIndex = 0;
      th.addEventListener("click", () => sortBy(table, th, index));
    });
  }
});

function sortBy(table, th, index) {
  const numeric = th.dataset.sort === "num";
  const descending = !th.classList.contains("sorted-desc");
  table.querySelectorAll("th").forEach((h) => h.classList.remove("sorted-asc", "sorted-desc"));
  th.classList.add(descending ? "sorted-desc" : "sorted-asc");
  const body = table.tBodies[0];
  const key = (row) => {
    const cell = row.cells[index];
    return numeric ? parseFloat(cell.dataset.value || cell.textContent) : cell.textContent.trim().toLowerCase();
  };
  const rows = Array.from(body.rows);
  rows.sort((a, b) => {
    const x = key(a), y = key(b);
    return (x < y ? -1 : x > y ? 1 : 0) * (descending ? -1 : 1);
  });
  rows.forEach((row) => body.appendChild(row));
}
