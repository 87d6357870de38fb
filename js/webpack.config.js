// Module ids named by their path inside the package, so the build is the same whichever directory it runs in.
module.exports = { optimization: { moduleIds: 'named' } };
