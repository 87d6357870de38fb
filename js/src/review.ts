// A change the agent proposes, shown at its cell as a diff until the user accepts or rejects it.
//
// A pending change lives only here, beside the cell: it is never in the notebook's model, so a
// save writes exactly what was accepted, and what the user types is never overwritten. A new
// cell waits as a review under (or above) the cell it is anchored to, every line shown added.
// Every text here comes from the notebook or the model: it is set as text, never as HTML.

import type { Cell } from '@jupyterlab/cells';
import type { NotebookPanel } from '@jupyterlab/notebook';
import { type PanelLayout, Widget } from '@lumino/widgets';

import { findCell, sourceOf } from './document';

/** A proposal as the kernel sends it. */
export interface IProposal {
  id: string;
  kind: 'insert' | 'change';
  cell_id: string; // the cell to change, or the cell a new one is placed against
  position: 'below' | 'above';
  new_id: string;
  cell_type: string;
  base: string; // the source the agent read: a change applies only while the cell still holds it
  source: string;
  lines: [string, string][]; // ['+' | '-' | ' ', text]
  mode: 'ask' | 'auto';
  summary: string;
}

export type Decision = 'accepted' | 'rejected' | 'outdated' | 'applied';

export interface IDecided {
  proposal: string;
  decision: Decision;
  detail: string;
}

type Tell = (decided: IDecided) => void;

function h(tag: string, className: string, text?: string): HTMLElement {
  const node = document.createElement(tag);
  node.className = className;
  if (text !== undefined) {
    node.textContent = text;
  }
  return node;
}

function button(label: string, className: string, onClick: () => void): HTMLButtonElement {
  const node = h('button', `monad-review-button ${className}`, label) as HTMLButtonElement;
  node.type = 'button';
  node.addEventListener('click', onClick);
  return node;
}

/** The diff at a cell: what the agent proposes, with Accept and Reject. */
class ReviewView extends Widget {
  constructor(readonly proposal: IProposal, actions: { accept: () => void; reject: () => void; dismiss: () => void }) {
    super();
    this.addClass('monad-review');
    this.node.dataset.proposal = proposal.id;
    this.node.dataset.kind = proposal.kind;
    this.node.setAttribute('role', 'group');
    this.node.setAttribute('aria-label', `Change proposed by the agent: ${proposal.summary}`);
    this._flag = h('span', 'monad-review-flag');
    this._what = h('span', 'monad-review-what');
    const head = h('div', 'monad-review-head');
    head.append(this._flag, this._what);
    const diff = h('div', 'monad-review-diff');
    for (const [sign, text] of proposal.lines) {
      const kind = sign === '+' ? 'add' : sign === '-' ? 'del' : 'same';
      const row = h('div', `monad-review-line monad-review-${kind}`);
      row.append(h('span', 'monad-review-sign', sign === '-' ? '\u2212' : sign), h('span', 'monad-review-text', text));
      diff.append(row);
    }
    if (proposal.lines.length === 0) {
      diff.append(h('div', 'monad-review-line monad-review-same', '(empty)'));
    }
    this._accept = button('Accept', 'monad-review-accept', actions.accept);
    this._reject = button('Reject', 'monad-review-reject', actions.reject);
    this._dismiss = button('Dismiss', 'monad-review-dismiss', actions.dismiss);
    this._note = h('span', 'monad-review-note');
    const row = h('div', 'monad-review-actions');
    row.append(this._accept, this._reject, this._dismiss, this._note);
    this.node.append(head, diff, row);
    this.show_state(proposal.mode === 'auto' ? 'applied' : 'pending', '');
  }

  /** Pending: Accept and Reject; applied or set aside: a line saying so and Dismiss. */
  show_state(state: 'pending' | 'applied' | 'outdated', note: string): void {
    this.node.dataset.state = state;
    const flags = { pending: 'proposed', applied: 'applied', outdated: 'set aside' };
    const whats = {
      pending: `${this.proposal.summary}: not in the notebook until you accept`,
      applied: `${this.proposal.summary}: applied by the agent (tools.notebook.approval is "auto")`,
      outdated: `${this.proposal.summary}: not applied`
    };
    this._flag.textContent = flags[state];
    this._what.textContent = whats[state];
    this._accept.hidden = this._reject.hidden = state !== 'pending';
    this._dismiss.hidden = state === 'pending';
    this._note.textContent = note;
  }

  private _flag: HTMLElement;
  private _what: HTMLElement;
  private _accept: HTMLButtonElement;
  private _reject: HTMLButtonElement;
  private _dismiss: HTMLButtonElement;
  private _note: HTMLElement;
}

/** "Accept all" / "Reject all" above the notebook (its content header) while two or more changes wait. */
class ReviewBar extends Widget {
  constructor(acceptAll: () => void, rejectAll: () => void) {
    super();
    this.addClass('monad-review-bar');
    this._count = h('span', 'monad-review-count');
    this.node.append(
      this._count,
      button('Accept all', 'monad-review-accept', acceptAll),
      button('Reject all', 'monad-review-reject', rejectAll)
    );
    this.hide();
  }

  set pending(count: number) {
    this._count.textContent = `${count} proposed changes`;
    this.setHidden(count < 2);
  }

  private _count: HTMLElement;
}

interface IPending {
  proposal: IProposal;
  view: ReviewView;
  cell: Cell;
  watch: () => void;
}

/** The proposals shown in one notebook: where each waits, and what became of it. */
export class Reviews {
  constructor(private readonly panel: NotebookPanel, private readonly tell: Tell) {
    this._bar = new ReviewBar(
      () => this.decideAll(true),
      () => this.decideAll(false)
    );
    panel.contentHeader.addWidget(this._bar);
  }

  /** The ids of the proposals waiting for a decision. */
  get pendingIds(): string[] {
    return [...this._pending.keys()];
  }

  /** The pending change to a cell, if any. */
  pendingFor(cellId: string): string | null {
    for (const item of this._pending.values()) {
      if (item.proposal.kind === 'change' && item.proposal.cell_id === cellId) {
        return item.proposal.id;
      }
    }
    return null;
  }

  /** Show a proposal at its cell (or apply it, in "auto" mode); an error line when it cannot be. */
  propose(proposal: IProposal): { status: string } | { error: string } {
    const found = findCell(this.panel, proposal.cell_id);
    if (!found) {
      return { error: `no cell with id ${proposal.cell_id} in the notebook: read_notebook lists the ids` };
    }
    if (proposal.kind === 'change') {
      const waiting = this.pendingFor(proposal.cell_id);
      if (waiting) {
        return { error: `cell ${proposal.cell_id} already has a change waiting for the user's decision (${waiting})` };
      }
      if (sourceOf(found.cell.model) !== proposal.base) {
        return { error: `cell ${proposal.cell_id} changed since you read it: read it again` };
      }
    }
    if (proposal.mode === 'auto') {
      const where = this.apply(proposal);
      if ('error' in where) {
        return where;
      }
      const view = new ReviewView(proposal, { accept: () => {}, reject: () => {}, dismiss: () => view.dispose() });
      this.attach(where.cell, view, 'below');
      return { status: 'applied' };
    }
    const view = new ReviewView(proposal, {
      accept: () => this.decide(proposal.id, true),
      reject: () => this.decide(proposal.id, false),
      dismiss: () => view.dispose()
    });
    this.attach(found.cell, view, proposal.kind === 'insert' ? proposal.position : 'below');
    const item: IPending = { proposal, view, cell: found.cell, watch: () => {} };
    item.watch = this.watch(item);
    this._pending.set(proposal.id, item);
    this.update();
    return { status: 'pending' };
  }

  /** Accept (true) or reject (false) one waiting proposal. */
  decide(id: string, accept: boolean): void {
    const item = this._pending.get(id);
    if (!item) {
      return;
    }
    if (!accept) {
      this.settle(item, 'rejected', '');
      item.view.dispose();
      return;
    }
    item.watch(); // the change about to be written is not the user's edit
    const done = this.apply(item.proposal);
    if ('error' in done) {
      this.settle(item, 'outdated', done.error);
      item.view.show_state('outdated', done.error);
      return;
    }
    this.settle(item, 'accepted', '');
    item.view.dispose();
  }

  decideAll(accept: boolean): void {
    for (const id of this.pendingIds) {
      this.decide(id, accept);
    }
  }

  dispose(): void {
    for (const item of this._pending.values()) {
      item.watch();
    }
    this._pending.clear();
    this._bar.dispose();
  }

  /** Put a proposal in the notebook: the cell it changed or the new cell, or why it can no longer be. */
  private apply(proposal: IProposal): { cell: Cell } | { error: string } {
    const found = findCell(this.panel, proposal.cell_id);
    if (!found) {
      return { error: `cell ${proposal.cell_id} is no longer in the notebook` };
    }
    if (proposal.kind === 'change') {
      if (sourceOf(found.cell.model) !== proposal.base) {
        return { error: 'the cell changed since the agent read it' };
      }
      found.cell.model.sharedModel.setSource(proposal.source);
      return { cell: found.cell };
    }
    if (findCell(this.panel, proposal.new_id)) {
      return { error: `a cell with id ${proposal.new_id} is already in the notebook` };
    }
    let index = proposal.position === 'above' ? found.index : found.index + 1;
    const previous = proposal.position === 'below' ? this._below.get(proposal.cell_id) : undefined;
    const after = previous ? findCell(this.panel, previous) : null;
    if (after && after.index >= found.index) {
      index = after.index + 1; // new cells below one cell keep the order they were proposed in
    }
    const model = this.panel.content.model;
    if (!model) {
      return { error: 'the notebook is not loaded' };
    }
    model.sharedModel.insertCell(index, {
      id: proposal.new_id,
      cell_type: proposal.cell_type as 'code' | 'markdown' | 'raw',
      source: proposal.source,
      metadata: {}
    });
    if (proposal.position === 'below') {
      this._below.set(proposal.cell_id, proposal.new_id);
    }
    const inserted = findCell(this.panel, proposal.new_id);
    return inserted ? { cell: inserted.cell } : { error: 'the new cell could not be found after inserting it' };
  }

  private attach(cell: Cell, view: ReviewView, position: 'below' | 'above'): void {
    const layout = cell.layout as PanelLayout;
    if (position === 'above') {
      layout.insertWidget(0, view);
    } else {
      layout.addWidget(view);
    }
  }

  /** A change waits on its cell's source: once the user edits the cell, the change is set aside. */
  private watch(item: IPending): () => void {
    const model = item.cell.model;
    const onChange = (): void => {
      if (item.proposal.kind !== 'change' || !this._pending.has(item.proposal.id)) {
        return;
      }
      if (sourceOf(model) !== item.proposal.base) {
        const note = 'You edited this cell, so the agent\u2019s change was set aside.';
        this.settle(item, 'outdated', 'the user edited the cell while the change waited');
        item.view.show_state('outdated', note);
      }
    };
    const onGone = (): void => {
      if (this._pending.has(item.proposal.id)) {
        this.settle(item, 'outdated', 'the cell was deleted while the change waited');
      }
    };
    model.contentChanged.connect(onChange);
    item.cell.disposed.connect(onGone);
    return () => {
      model.contentChanged.disconnect(onChange);
      item.cell.disposed.disconnect(onGone);
    };
  }

  private settle(item: IPending, decision: Decision, detail: string): void {
    item.watch();
    this._pending.delete(item.proposal.id);
    this.update();
    this.tell({ proposal: item.proposal.id, decision, detail });
  }

  private update(): void {
    this._bar.pending = this._pending.size;
  }

  private _pending = new Map<string, IPending>();
  private _below = new Map<string, string>();
  private _bar: ReviewBar;
}
