"""What ``%monad help`` prints: the cell magic's options and every ``%monad`` command, a line each."""

HELP = """\
%%monad [--session NAME] [--model MODEL] [--new]
    The cell body is your message to the agent, in this notebook's own session unless
    --session switches to (or creates) NAME. --model overrides models.main.model for
    this notebook, --new starts a fresh session.

%monad help                 this text
%monad status               the session, its model, how full its window is, whether python asks first
%monad sessions             every stored session, and the notebook each belongs to
%monad session NAME         switch to NAME (created on first use)
%monad branch NEW           copy this session into NEW and switch to it
%monad reset                forget this session's conversation
%monad delete NAME          delete a session and everything stored with it
%monad config               the effective configuration and where it came from
%monad prompt [--step N]    exactly what the model received at a step (default: the latest)
%monad panel                the live panel: occupancy, timeline, evictions, compactions, memory
%monad compact              fold the window into the rolling summary now
%monad handoff NEW          start NEW seeded with this session's summary, and switch to it
%monad memory               remembered facts, and pending "remember these?" suggestions
%monad remember "FACT"      remember a fact (global scope)
%monad remember --accept N  save pending suggestion N (see %monad memory); --dismiss N drops it
%monad forget ID            forget a remembered fact
%monad export PATH.ipynb    write this session as a notebook to run top to bottom (--session NAME for another)
%monad code                 put the code the last turn ran into the next cell
%monad rewind [TURN]        the session as it was before TURN (the last by default): conversation, files, names;
                            it goes on as a copy, the original keeps every turn; --undo goes back to it
%monad rebuild              after a kernel restart: rerun the code that made what it lost (one approval)"""
