import sys
from pathlib import Path

# Make `import srl_trainer` work whichever directory pytest is started from.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
