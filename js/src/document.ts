// The open notebook as its model holds it now (unsaved edits included), by nbformat cell id.

import type { Cell, ICellModel } from '@jupyterlab/cells';
import type { NotebookPanel } from '@jupyterlab/notebook';
import type { JSONObject } from '@lumino/coreutils';

/** One cell as the kernel receives it: what the agent reads. */
export interface ICellRecord extends JSONObject {
  id: string;
  index: number;
  type: string;
  source: string;
  execution_count: number | null;
}

/** The cell with this nbformat id and where it is, or null. */
export function findCell(panel: NotebookPanel, id: string): { cell: Cell; index: number } | null {
  const widgets = panel.content.widgets;
  for (let index = 0; index < widgets.length; index++) {
    if (widgets[index].model.id === id) {
      return { cell: widgets[index], index };
    }
  }
  return null;
}

/** The source the user sees in a cell now. */
export function sourceOf(model: ICellModel): string {
  return model.sharedModel.getSource();
}

function record(model: ICellModel, index: number, withOutputs: boolean): ICellRecord {
  const found: ICellRecord = {
    id: model.id,
    index,
    type: model.type,
    source: sourceOf(model),
    execution_count: null
  };
  if (model.type === 'code') {
    const code = model as ICellModel & { executionCount: number | null; outputs: { toJSON(): JSONObject[] } };
    found.execution_count = code.executionCount ?? null;
    if (withOutputs) {
      found.outputs = code.outputs.toJSON();
    }
  }
  return found;
}

/** Cells ``start`` .. ``start + limit - 1`` (or those named in ``ids``), with the notebook's cell count. */
export function readCells(
  panel: NotebookPanel,
  options: { start: number; limit: number; outputs: boolean; ids?: string[] | null }
): { total: number; cells: ICellRecord[] } {
  const widgets = panel.content.widgets;
  const cells: ICellRecord[] = [];
  if (options.ids) {
    for (const id of options.ids) {
      const found = findCell(panel, id);
      if (found) {
        cells.push(record(found.cell.model, found.index, options.outputs));
      }
    }
  } else {
    const end = Math.min(widgets.length, options.start + options.limit);
    for (let index = Math.max(0, options.start); index < end; index++) {
      cells.push(record(widgets[index].model, index, options.outputs));
    }
  }
  return { total: widgets.length, cells };
}
