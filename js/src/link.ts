// One notebook's line to the monad-notebook kernel side: a comm the kernel opens, per request one reply.
//
// The kernel opens the comm (target "monad-notebook") when the agent first needs the notebook, and
// asks; each request carries an id that its reply repeats. Decisions the user takes are sent
// unasked. A kernel shared by several notebooks asks them all "hello" with the running cell's id:
// only the notebook that holds that cell answers the requests that follow.

import { CodeCell, type MarkdownCell } from '@jupyterlab/cells';
import type { NotebookPanel } from '@jupyterlab/notebook';
import type { Kernel, KernelMessage } from '@jupyterlab/services';
import type { JSONObject } from '@lumino/coreutils';

import { findCell, readCells, sourceOf } from './document';
import { type IDecided, type IProposal, Reviews } from './review';

export const TARGET = 'monad-notebook';
const VERSION = '0.1.0';

type Request = JSONObject & { id?: string; op?: string };

export class NotebookLink {
  constructor(private readonly panel: NotebookPanel, private readonly app: string) {
    this.reviews = new Reviews(panel, decided => this.tellDecision(decided));
    panel.sessionContext.kernelChanged.connect(() => this.follow(), this);
    void panel.sessionContext.ready.then(() => this.follow());
    panel.disposed.connect(() => this.reviews.dispose());
  }

  /** Register the comm target on the notebook's kernel, once per kernel connection. */
  private follow(): void {
    const kernel = this.panel.sessionContext.session?.kernel ?? null;
    if (!kernel || this._kernels.has(kernel)) {
      return;
    }
    this._kernels.add(kernel);
    kernel.registerCommTarget(TARGET, (comm, msg) => this.open(comm, msg));
  }

  private open(comm: Kernel.IComm, msg: KernelMessage.ICommOpenMsg): void {
    this._comm = comm;
    comm.onMsg = message => this.handle(comm, message.content.data as Request);
    comm.onClose = () => {
      if (this._comm === comm) {
        this._comm = null;
      }
    };
    this.handle(comm, msg.content.data as Request);
  }

  private handle(comm: Kernel.IComm, request: Request): void {
    if (!request || typeof request.id !== 'string') {
      return;
    }
    if (request.op === 'hello') {
      const cellId = String(request.cell_id ?? '');
      this._mine = cellId !== '' && findCell(this.panel, cellId) !== null;
    }
    if (!this._mine) {
      return; // the running cell is in another notebook on this kernel: that one answers
    }
    let reply: JSONObject;
    try {
      reply = { ok: true, ...this.answer(comm, request) };
    } catch (error) {
      reply = { ok: false, error: `the notebook could not do it: ${String(error)}` };
    }
    if ('error' in reply) {
      reply.ok = false;
    }
    comm.send({ id: request.id, ...reply });
  }

  private answer(comm: Kernel.IComm, request: Request): JSONObject {
    switch (request.op) {
      case 'hello':
        return {
          path: this.panel.context.path,
          app: this.app,
          version: VERSION,
          pending: this.reviews.pendingIds
        };
      case 'read': {
        const ids = Array.isArray(request.ids) ? (request.ids as string[]) : null;
        const read = readCells(this.panel, {
          start: Number(request.start ?? 0),
          limit: Number(request.limit ?? 20),
          outputs: Boolean(request.outputs),
          ids
        });
        const pending = read.cells.map(cell => this.reviews.pendingFor(cell.id));
        return { total: read.total, cells: read.cells, pending, path: this.panel.context.path };
      }
      case 'propose': {
        const proposal = request.proposal as unknown as IProposal;
        const shown = this.reviews.propose(proposal);
        if (!('error' in shown)) {
          this._askedBy.set(proposal.id, comm);
        }
        return shown;
      }
      case 'run':
        return this.run(String(request.cell_id ?? ''), String(request.source ?? ''));
      default:
        return { error: `unknown request ${String(request.op)}` };
    }
  }

  /**
   * Queue a cell to run: the kernel is busy with the agent's turn, so it runs after the turn ends. Only
   * while the cell still holds the source the kernel checked and the user approved: that is what runs.
   */
  private run(cellId: string, source: string): JSONObject {
    const found = findCell(this.panel, cellId);
    if (!found) {
      return { error: `no cell with id ${cellId} in the notebook: read_notebook lists the ids` };
    }
    if (sourceOf(found.cell.model) !== source) {
      return { error: `cell ${cellId} changed since it was read: read it again` };
    }
    if (found.cell.model.type === 'markdown') {
      (found.cell as MarkdownCell).rendered = true;
      return { status: 'rendered' };
    }
    if (found.cell.model.type !== 'code') {
      return { error: `cell ${cellId} is a raw cell: it does not run` };
    }
    void CodeCell.execute(found.cell as CodeCell, this.panel.sessionContext).catch(() => undefined);
    return { status: 'queued' };
  }

  /** A decision goes back on the comm that proposed it: each session of the kernel has its own. */
  private tellDecision(decided: IDecided): void {
    const comm = this._askedBy.get(decided.proposal) ?? this._comm;
    this._askedBy.delete(decided.proposal);
    if (comm && !comm.isDisposed) {
      comm.send({ type: 'decision', ...decided });
    }
  }

  private reviews: Reviews;
  private _comm: Kernel.IComm | null = null;
  private _askedBy = new Map<string, Kernel.IComm>();
  private _mine = false;
  private _kernels = new WeakSet<Kernel.IKernelConnection>();
}
