// A change the agent proposes, shown at its cell as a diff until the user accepts or rejects it.
//
// A pending change lives only here, beside the cell: it is never in the notebook's model, so a
// save writes exactly what was accepted, and what the user types is never overwritten. A new
// cell waits as a review under (or above) the cell it is anchored to, every line shown added.
// A change whose cell the user edits is set aside; the kernel works out whether it applies on top
// of the edit (``notebook/merge.py``), and if it does the review shows exactly what the cell would
// then hold, as a diff against the edit, with "Apply on top" beside "Dismiss".
// Every text here comes from the notebook or the model: it is set as text, never as HTML.

import type { Cell } from '@jupyterlab/cells';
import type { NotebookPanel } from '@jupyterlab/notebook';
import { type PanelLayout, Widget } from '@lumino/widgets';

import { findCell, sourceOf } from './document';

/** A proposal as the kernel sends it. */
export interface IProposal {
  id: string;
  kind: 'insert' | 'change' | 'remove'; // remove: a rewind takes out a cell the agent put in
  cell_id: string; // the cell to change or remove, or the cell a new one is placed against
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
  on_top?: string; // accepted on top of the user's edit: the source it was applied on
}

/** The kernel's answer to "merge": the change on top of the user's edit, or where the two overlap. */
export interface IMerged {
  proposal: string;
  ref: number;
  source?: string;
  lines?: [string, string][];
  summary?: string;
  overlap?: string;
}

type Tell = (decided: IDecided) => void;
type Ask = (proposal: string, message: { type: 'merge'; proposal: string; source: string; ref: number }) => void;

const EDITED = 'You edited this cell, so the agent\u2019s change was set aside.';
const EDITED_REMOVAL = 'You edited this cell, so its removal was set aside.';
const MERGE_WAIT_MS = 300; // after the last keystroke, before the kernel is asked for the change on top of the edit

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

interface IActions {
  accept: () => void;
  reject: () => void;
  onTop: () => void;
  dismiss: () => void;
}

type State = 'pending' | 'applied' | 'outdated' | 'edited' | 'on-top';

/** The diff at a cell: what the agent proposes, with Accept and Reject (or Apply on top, or Dismiss). */
class ReviewView extends Widget {
  constructor(readonly proposal: IProposal, actions: IActions) {
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
    this._diff = h('div', 'monad-review-diff');
    this._accept = button('Accept', 'monad-review-accept', actions.accept);
    this._reject = button('Reject', 'monad-review-reject', actions.reject);
    this._onTop = button('Apply on top', 'monad-review-accept monad-review-on-top', actions.onTop);
    this._dismiss = button('Dismiss', 'monad-review-dismiss', actions.dismiss);
    this._note = h('span', 'monad-review-note');
    const row = h('div', 'monad-review-actions');
    row.append(this._accept, this._reject, this._onTop, this._dismiss, this._note);
    this.node.append(head, this._diff, row);
    this.show_state(proposal.mode === 'auto' ? 'applied' : 'pending', '');
  }

  get state(): State {
    return this.node.dataset.state as State;
  }

  /**
   * Pending: Accept and Reject; edited by the user: set aside with Dismiss, and Apply on top once the
   * kernel found the change applies on top of the edit (``onTop``: its diff, from the edit to what lands).
   */
  show_state(state: State, note: string, onTop?: { lines: [string, string][]; summary: string }): void {
    this.node.dataset.state = state;
    const flags: Record<State, string> = {
      pending: 'proposed',
      applied: 'applied',
      outdated: 'set aside',
      edited: 'set aside',
      'on-top': 'on top of your edit'
    };
    const whats: Record<State, string> = {
      pending:
        this.proposal.kind === 'remove'
          ? `${this.proposal.summary}: the cell stays until you accept`
          : `${this.proposal.summary}: not in the notebook until you accept`,
      applied: `${this.proposal.summary}: applied by the agent (tools.notebook.approval is "auto")`,
      outdated: `${this.proposal.summary}: not applied`,
      edited: `${this.proposal.summary}, against the cell as the agent read it: not applied`,
      'on-top': `${onTop?.summary ?? ''}: not in the notebook until you apply it`
    };
    this._flag.textContent = flags[state];
    this._what.textContent = whats[state];
    this.draw(onTop?.lines ?? this.proposal.lines);
    this._accept.hidden = this._reject.hidden = state !== 'pending';
    this._onTop.hidden = state !== 'on-top';
    this._dismiss.hidden = state === 'pending';
    this._note.textContent = note;
  }

  private draw(lines: [string, string][]): void {
    if (this._drawn === lines) {
      return;
    }
    this._drawn = lines;
    this._diff.replaceChildren();
    for (const [sign, text] of lines) {
      const kind = sign === '+' ? 'add' : sign === '-' ? 'del' : 'same';
      const row = h('div', `monad-review-line monad-review-${kind}`);
      row.append(h('span', 'monad-review-sign', sign === '-' ? '\u2212' : sign), h('span', 'monad-review-text', text));
      this._diff.append(row);
    }
    if (lines.length === 0) {
      this._diff.append(h('div', 'monad-review-line monad-review-same', '(empty)'));
    }
  }

  private _flag: HTMLElement;
  private _what: HTMLElement;
  private _diff: HTMLElement;
  private _drawn: [string, string][] | null = null;
  private _accept: HTMLButtonElement;
  private _reject: HTMLButtonElement;
  private _onTop: HTMLButtonElement;
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

interface IOffer {
  ref: number;
  edited: string; // the source the kernel was asked about
  merged?: IMerged; // its answer, once it came
}

interface IPending {
  proposal: IProposal;
  view: ReviewView;
  cell: Cell;
  watch: () => void;
  offer: IOffer | null;
  timer: number;
}

/** The proposals shown in one notebook: where each waits, and what became of it. */
export class Reviews {
  constructor(private readonly panel: NotebookPanel, private readonly tell: Tell, private readonly ask: Ask) {
    this._bar = new ReviewBar(
      () => this.decideAll(true),
      () => this.decideAll(false)
    );
    panel.contentHeader.addWidget(this._bar);
  }

  /** The ids of the proposals waiting for a decision (set aside ones included: the user has not decided). */
  get pendingIds(): string[] {
    return [...this._pending.keys()];
  }

  /** The pending change to a cell, if any. */
  pendingFor(cellId: string): string | null {
    for (const item of this._pending.values()) {
      if (item.proposal.kind !== 'insert' && item.proposal.cell_id === cellId) {
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
    if (proposal.kind !== 'insert') {
      const waiting = this.pendingFor(proposal.cell_id);
      if (waiting) {
        return { error: `cell ${proposal.cell_id} already has a change waiting for the user's decision (${waiting})` };
      }
      if (sourceOf(found.cell.model) !== proposal.base) {
        return { error: `cell ${proposal.cell_id} changed since you read it: read it again` };
      }
    }
    if (proposal.mode === 'auto') {
      const where = this.apply(proposal, false);
      if ('error' in where) {
        return where;
      }
      const none = (): void => undefined;
      const view = new ReviewView(proposal, { accept: none, reject: none, onTop: none, dismiss: () => view.dispose() });
      this.attach(where.cell, view, 'below');
      return { status: 'applied' };
    }
    const view = new ReviewView(proposal, {
      accept: () => this.decide(proposal.id, true),
      reject: () => this.decide(proposal.id, false),
      onTop: () => this.applyOnTop(proposal.id),
      dismiss: () => this.dismiss(proposal.id, view)
    });
    this.attach(found.cell, view, proposal.kind === 'insert' ? proposal.position : 'below');
    const item: IPending = { proposal, view, cell: found.cell, watch: () => {}, offer: null, timer: 0 };
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
    const done = this.apply(item.proposal, true);
    if ('error' in done) {
      this.settle(item, 'outdated', done.error);
      item.view.show_state('outdated', done.error);
      return;
    }
    this.settle(item, 'accepted', '');
    item.view.dispose();
  }

  /** "Accept all" accepts the changes still as proposed (one set aside needs its own look); "Reject all" all. */
  decideAll(accept: boolean): void {
    for (const item of [...this._pending.values()]) {
      if (!accept || item.view.state === 'pending') {
        this.decide(item.proposal.id, accept);
      }
    }
  }

  /** The kernel's answer to a merge asked for: shown only while the cell still holds the edit it was about. */
  merged(answer: IMerged): void {
    const item = this._pending.get(answer.proposal);
    const offer = item?.offer;
    if (!item || !offer || offer.ref !== answer.ref || sourceOf(item.cell.model) !== offer.edited) {
      return; // an answer about an earlier keystroke: a newer question is on its way
    }
    offer.merged = answer;
    if (answer.source !== undefined && answer.lines) {
      const note = `${EDITED} Apply on top puts it into your edit as shown.`;
      item.view.show_state('on-top', note, { lines: answer.lines, summary: answer.summary ?? '' });
    } else {
      item.view.show_state('edited', `${EDITED} It cannot be applied on top: ${answer.overlap ?? 'unknown'}.`);
    }
  }

  dispose(): void {
    for (const item of this._pending.values()) {
      item.watch();
    }
    this._pending.clear();
    this._bar.dispose();
  }

  /** "Apply on top": the merged source the user saw goes into the cell, only while it holds the edit it was made on. */
  private applyOnTop(id: string): void {
    const item = this._pending.get(id);
    const merged = item?.offer?.merged?.source;
    if (!item || !item.offer || merged === undefined) {
      return;
    }
    if (sourceOf(item.cell.model) !== item.offer.edited) {
      this.askOnTop(item); // typed since the diff was drawn: it is worked out again first
      return;
    }
    const edited = item.offer.edited;
    item.watch();
    item.cell.model.sharedModel.setSource(merged);
    this.settle(item, 'accepted', '', edited);
    item.view.dispose();
  }

  private dismiss(id: string, view: ReviewView): void {
    const item = this._pending.get(id);
    if (item) {
      this.settle(item, 'outdated', 'the user edited the cell while the change waited');
    }
    view.dispose();
  }

  /** Put a proposal in the notebook: the cell it changed or the new cell, or why it can no longer be. */
  private apply(proposal: IProposal, accepted: boolean): { cell: Cell } | { error: string } {
    const found = findCell(this.panel, proposal.cell_id);
    if (!found) {
      return { error: `cell ${proposal.cell_id} is no longer in the notebook` };
    }
    if (proposal.kind !== 'insert' && sourceOf(found.cell.model) !== proposal.base) {
      return { error: 'the cell changed since the agent read it' };
    }
    if (proposal.kind === 'change') {
      found.cell.model.sharedModel.setSource(proposal.source);
      return { cell: found.cell };
    }
    if (proposal.kind === 'remove') {
      const notebook = this.panel.content.model;
      if (!notebook) {
        return { error: 'the notebook is not loaded' };
      }
      notebook.sharedModel.deleteCell(found.index);
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
    // A code cell the user accepted after reading every line is theirs, as a cell they add is:
    // trusted, with no outputs yet. One the agent put in unasked ("auto") is not, as with a kernel's
    // set_next_input. Either way the server signs the notebook on save only if every output is trusted.
    const trusted = accepted && proposal.cell_type === 'code';
    model.sharedModel.insertCell(index, {
      id: proposal.new_id,
      cell_type: proposal.cell_type as 'code' | 'markdown' | 'raw',
      source: proposal.source,
      metadata: trusted ? { trusted: true } : {}
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

  /**
   * A change waits on its cell's source: once the user edits the cell the change is set aside, and
   * the kernel is asked whether it applies on top of the edit; an edit undone brings it back.
   */
  private watch(item: IPending): () => void {
    const model = item.cell.model;
    const onChange = (): void => {
      if (item.proposal.kind === 'insert' || !this._pending.has(item.proposal.id)) {
        return;
      }
      if (item.proposal.kind === 'remove') {
        const same = sourceOf(model) === item.proposal.base;
        item.view.show_state(same ? 'pending' : 'edited', same ? '' : EDITED_REMOVAL);
        return;
      }
      window.clearTimeout(item.timer);
      item.offer = null;
      if (sourceOf(model) === item.proposal.base) {
        item.view.show_state('pending', '');
        return;
      }
      if (item.view.state !== 'edited') {
        item.view.show_state('edited', EDITED);
      }
      item.timer = window.setTimeout(() => this.askOnTop(item), MERGE_WAIT_MS);
    };
    const onGone = (): void => {
      if (this._pending.has(item.proposal.id)) {
        this.settle(item, 'outdated', 'the cell was deleted while the change waited');
      }
    };
    model.contentChanged.connect(onChange);
    item.cell.disposed.connect(onGone);
    return () => {
      window.clearTimeout(item.timer);
      model.contentChanged.disconnect(onChange);
      item.cell.disposed.disconnect(onGone);
    };
  }

  private askOnTop(item: IPending): void {
    const edited = sourceOf(item.cell.model);
    item.offer = { ref: ++this._asked, edited };
    item.view.show_state('edited', EDITED);
    this.ask(item.proposal.id, { type: 'merge', proposal: item.proposal.id, source: edited, ref: item.offer.ref });
  }

  private settle(item: IPending, decision: Decision, detail: string, onTop?: string): void {
    item.watch();
    this._pending.delete(item.proposal.id);
    this.update();
    this.tell({ proposal: item.proposal.id, decision, detail, ...(onTop !== undefined ? { on_top: onTop } : {}) });
  }

  private update(): void {
    this._bar.pending = this._pending.size;
  }

  private _pending = new Map<string, IPending>();
  private _below = new Map<string, string>();
  private _asked = 0;
  private _bar: ReviewBar;
}
