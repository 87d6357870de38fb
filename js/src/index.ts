// monad-notebook in JupyterLab 4 and Notebook 7: the agent reads the open notebook and proposes
// cells; each proposal waits at its cell as a diff until the user accepts or rejects it.

import type { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { INotebookTracker } from '@jupyterlab/notebook';

import { NotebookLink } from './link';

const plugin: JupyterFrontEndPlugin<void> = {
  id: 'monad-notebook:cells',
  description: 'The agent reads the open notebook; its proposed cells are accepted or rejected as diffs at the cell.',
  autoStart: true,
  requires: [INotebookTracker],
  activate: (app: JupyterFrontEnd, tracker: INotebookTracker) => {
    tracker.widgetAdded.connect((_, panel) => {
      new NotebookLink(panel, app.name);
    });
  }
};

export default plugin;
